-- Batches, GO n, variables, PRINT, messages and which errors end what.
print 'hello';
-- PRINT sends up to 8,000 characters of varchar (4,000 of nvarchar): 8,000 x, then 4,000 y.
print replicate(cast('x' as varchar(max)), 9000);
print replicate(cast(N'y' as nvarchar(max)), 9000);
go
declare @i int = 0, @s varchar(20);
set @i += 5;
set @s = 'five';
select @i as i, @s as s;
go
create table g (n int);
go
insert into g values (1);
go 3
select count(*) as three from g;
go
-- A statement-level error: the batch goes on.
select 1 / 0 as boom;
print 'after divide by zero';
go
-- A conversion error ends the batch.
select cast('abc' as int) as x;
print 'not printed';
go
print 'next batch runs';
go
-- Compile errors stop the whole batch before anything runs.
print 'not printed either';
select nosuchcolumn from g;
go
-- Syntax errors.
select * fro g;
go
selec 1;
go
select 'unclosed;
go
-- Undeclared variable.
select @nope;
go
-- @@ERROR and @@ROWCOUNT.
select n from g where n = 1;
select @@rowcount as rc;
go
select 1 / 0;
select @@error as err;
go
-- SET options.
set nocount on;
select n from g where n = 1;
insert into g values (2);
set nocount off;
insert into g values (3);
go
set bogus_option on;
go
-- RAISERROR and THROW.
raiserror('just info %d', 10, 1, 42);
raiserror('an error: %s', 16, 2, 'bad');
print 'raiserror 16 does not end the batch';
go
throw 50001, 'thrown', 3;
print 'not printed';
go
-- TRY/CATCH.
begin try
    select 1 / 0;
    print 'not printed';
end try
begin catch
    select error_number() as num, cast(error_message() as varchar(40)) as msg, error_severity() as sev, error_state() as st, error_line() as line;
end catch;
go
-- IF / WHILE.
declare @k int = 0;
while @k < 3
begin
    set @k = @k + 1;
    if @k = 2 continue;
    print concat('k = ', @k);
end;
if exists (select * from g where n = 3) print 'three is there' else print 'no three';
go
-- Session options that change results.
create table opts (a int, b varchar(5));
insert into opts values (1, 'x'), (2, null), (3, 'z');
set rowcount 2;
select * from opts;
update opts set a = a + 10;
set rowcount 0;
select * from opts;
set ansi_nulls off;
select a from opts where b = null;
set ansi_nulls on;
select a from opts where b = null;
set concat_null_yields_null off;
select 'a' + b as c from opts;
set concat_null_yields_null on;
select 'a' + b as c from opts;
go
select datepart(weekday, '2024-01-31') as sunday_first;
set datefirst 1;
select datepart(weekday, '2024-01-31') as monday_first, datename(weekday, '2024-01-31') as day_name, @@datefirst as datefirst;
set datefirst 7;
go
select cast('05/03/2024' as date) as month_first;
set dateformat dmy;
select cast('05/03/2024' as date) as day_first;
set dateformat mdy;
go
