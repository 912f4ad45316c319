-- Variables and control flow.
declare @a int = 1, @b varchar(10) = 'x', @c decimal(5,2);
select @a as a, @b as b, @c as c;
select @a = 10, @b = 'ten';
select @a as a, @b as b;
go
-- SELECT @v = … from a query: the last row wins; no row leaves the value.
create table nums (n int primary key);
insert into nums values (1), (2), (3);
declare @last int = -1;
select @last = n from nums order by n;
select @last as last_n;
select @last = n from nums where n > 10;
select @last as unchanged;
go
-- WHILE with BREAK and CONTINUE, nested blocks without semicolons.
declare @i int = 0, @sum int = 0
while 1 = 1
begin
    set @i = @i + 1
    if @i % 2 = 0 continue
    if @i > 9 break
    set @sum += @i
end
select @i as i, @sum as odd_sum
go
-- GOTO and labels.
declare @n int = 0;
again:
set @n = @n + 1;
if @n < 3 goto again;
select @n as n;
go
-- RETURN ends a batch.
print 'before return';
return;
print 'after return';
go
-- WAITFOR DELAY.
waitfor delay '00:00:00.05';
print 'waited';
go
-- Variable scope: one batch only.
declare @gone int = 5;
go
select @gone;
go
declare @x int;
declare @x int;
go
-- XACT_STATE and TRY/CATCH with a transaction.
create table acc (id int primary key, bal int check (bal >= 0));
insert into acc values (1, 10);
go
begin try
    begin tran;
    update acc set bal = bal - 5 where id = 1;
    update acc set bal = bal - 50 where id = 1;
    commit;
end try
begin catch
    select xact_state() as state_in_catch, @@trancount as tc, error_number() as err;
    if @@trancount > 0 rollback;
end catch;
select bal from acc;
go
set xact_abort on;
begin try
    begin tran;
    insert into acc values (1, 1);
end try
begin catch
    select xact_state() as doomed;
    rollback;
end catch;
set xact_abort off;
go
-- Nested TRY, THROW re-throws to the outer CATCH.
begin try
    begin try
        raiserror('inner %s', 16, 1, 'boom');
    end try
    begin catch
        print 'inner catch: ' + error_message();
        throw;
    end catch
end try
begin catch
    print 'outer catch: ' + error_message() + ' (' + cast(error_number() as varchar(10)) + ')';
end catch
go
-- RAISERROR formats.
raiserror('%d items, %5s|, %-5s|, %x', 10, 1, 42, 'ab', 'cd', 255);
raiserror(50005, 10, 1);
print 'raiserror with an unknown message number fails alone';
go
