create table t (id int identity primary key, v varchar(20));
go
create procedure add_row @v varchar(20), @id int output
as
begin
    set nocount on;
    insert into t (v) values (@v);
    set @id = scope_identity();
    return 7;
end
go
declare @new int, @rc int;
exec @rc = add_row 'first', @new output;
select @rc as rc, @new as new_id;
exec add_row @v = 'second', @id = @new output;
select @new as second_id;
go
create proc get_rows @min int = 0 as select * from t where id > @min order by id;
go
get_rows
go
exec get_rows 1
go
exec get_rows @nope = 1
go
exec add_row
go
exec nosuch
go
create procedure rec @n int as begin if @n > 0 exec rec @n - 1; select @@nestlevel as lvl where @n = 0; end
go
exec rec 3
go
exec rec 40
go
create procedure bad_tran as begin tran
go
exec bad_tran
select @@trancount as tc
rollback
go
create procedure thrower as begin select 1 as before_error; select 1/0; select 2 as after_error; end
go
exec thrower
go
begin try exec thrower end try begin catch select error_number() n, error_procedure() p, error_line() l end catch
go
exec ('select 42 as dynamic')
go
declare @out int
exec sp_executesql N'select @a + @b as sum; set @c = @a * @b', N'@a int, @b int, @c int output', @a = 3, @b = 4, @c = @out output
select @out as product
go
create or alter procedure get_rows as select count(*) as n from t
go
exec get_rows
drop procedure get_rows
exec get_rows
go
-- INSERT … EXEC.
create table captured (a int, b varchar(10));
go
create proc two_sets @n int as begin select @n, 'x'; select @n + 1, 'y'; print 'inside' end
go
insert into captured exec two_sets 5;
insert into captured (a) exec ('select 42');
select * from captured;
insert into captured exec two_sets;
select count(*) as still_three from captured;
go
-- GOTO to a label that does not exist.
goto nowhere;
go
