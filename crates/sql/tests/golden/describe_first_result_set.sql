-- sp_describe_first_result_set: the first result set's columns, found without running the batch.
create table t (id int not null primary key, name varchar(20), amount decimal(10,2), note nvarchar(max), at datetime2(3));
go
exec sp_describe_first_result_set N'select id, name, amount, note, at from t';
go
exec sp_describe_first_result_set @tsql = N'select id, name as label, @p + 1 as next from t where id = @p', @params = N'@p int';
go
-- Two paths: a name that differs is NULL, nullability joins, varchar widens.
exec sp_describe_first_result_set N'if 1 = 1 select name as a, id from t else select cast(''x'' as varchar(50)) as b, id from t';
go
-- Nothing sent: an empty description.
exec sp_describe_first_result_set N'declare @x int = 1; set @x = 2; update t set name = ''a'' where id = @x';
go
-- The first query after a RETURN on one path only.
exec sp_describe_first_result_set N'if 1 = 0 return; select id from t';
go
create procedure p_first @n int as select id, amount from t where id = @n;
go
exec sp_describe_first_result_set N'exec p_first 1';
go
-- Paths that disagree, dynamic SQL, a bad browse mode.
exec sp_describe_first_result_set N'if 1 = 1 select id from t else select name from t';
go
exec sp_describe_first_result_set N'exec (''select 1'')';
go
exec sp_describe_first_result_set N'select 1', null, 3;
go
exec sp_describe_first_result_set;
go
-- Nothing ran: the UPDATE above changed no row.
select count(*) from t where name = 'a';
go
-- The same description as a table: sys.dm_exec_describe_first_result_set, with the
-- error of a batch that cannot be described as a row.
select column_ordinal, name, is_nullable, system_type_name, max_length, tds_type_id, error_number
from sys.dm_exec_describe_first_result_set(N'select 1 as one, N''x'' as two, cast(null as decimal(9,2)) as three', NULL, 0)
order by column_ordinal;
select column_ordinal, name, system_type_name
from sys.dm_exec_describe_first_result_set(N'select @a as a, @b as b', N'@a int, @b varchar(10)', 0);
select error_number, error_severity, error_type, error_type_desc, left(error_message, 40) as message
from sys.dm_exec_describe_first_result_set(N'exec sp_executesql N''select 1''', NULL, 0);
select count(*) as no_result from sys.dm_exec_describe_first_result_set(N'set nocount on', NULL, 0);
go
