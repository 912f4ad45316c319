-- sp_describe_undeclared_parameters: the parameters a batch uses without declaring them,
-- with the types their uses suggest (what JDBC's getParameterMetaData asks for).
create table t (id int not null primary key, name varchar(20), code char(30), amount decimal(10,2), note nvarchar(max), at datetime2(3), guid uniqueidentifier);
go
create function f_twice (@n smallint) returns int as begin return @n * 2 end;
go
create procedure p_set @id int, @label nvarchar(40) output as set @label = N'x';
go
-- = and <> give the other side's type; <, > and LIKE the candidate nearest it.
exec sp_describe_undeclared_parameters N'select id from t where id = @P0 and name <> @P1 and code > @P2 and note like @P3 and amount >= @P4 and at < @P5';
go
-- INSERT VALUES and UPDATE SET: the column's type; TOP and OFFSET/FETCH: bigint.
exec sp_describe_undeclared_parameters N'insert into t (id, name, guid) values (@P0, @P1, @P2)';
go
exec sp_describe_undeclared_parameters N'update top (@P0) t set amount = @P1, at = @P2 where id in (@P3, @P4)';
go
exec sp_describe_undeclared_parameters N'select id from t order by id offset @P0 rows fetch next @P1 rows only';
go
-- CAST, arithmetic, a function's parameter (with its name), a procedure's OUTPUT one.
exec sp_describe_undeclared_parameters N'select cast(@a as date), id + @b, dbo.f_twice(@c) from t';
go
exec sp_describe_undeclared_parameters N'exec p_set @d, @e output';
go
-- Assigned to: output parameters. Declared in @params or by DECLARE: not described.
exec sp_describe_undeclared_parameters N'declare @x int = @init; select @out = name from t where id = @x', N'@unused int';
go
exec sp_describe_undeclared_parameters @tsql = N'select id from t where id = @id or name = @name', @params = N'@id int';
go
-- Nothing undeclared: an empty result.
exec sp_describe_undeclared_parameters N'select 1';
go
-- Errors as SQL Server's: used twice (11508), two untyped operands (11503), no context (11502).
exec sp_describe_undeclared_parameters N'select id from t where @t >= id and @t <= id';
go
exec sp_describe_undeclared_parameters N'select id from t where @p1 = @p2';
go
exec sp_describe_undeclared_parameters N'select @p';
go
exec sp_describe_undeclared_parameters N'select id from nowhere where id = @p';
go
exec sp_describe_undeclared_parameters;
go
-- INSERT ... SELECT: a select item goes to its column.
exec sp_describe_undeclared_parameters N'insert into t (id, name) select @a, @b where not exists (select 1 from t where id = 0)';
go
