-- The columns of sys.dm_exec_procedure_stats, as SQL Server documents them: name, type,
-- length and nullability, in order.
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_exec_procedure_stats' order by c.column_id
go
-- A call is counted once, however many statements its procedure runs.
create database procstats
go
use procstats
go
create table t (id int primary key, v int)
go
create procedure dbo.p as
select count(*) as n from t;
update t set v = v + 1 where id = 1;
go
exec dbo.p
exec dbo.p
go
select object_name(object_id, database_id) as name, type, type_desc, execution_count,
       case when last_execution_time >= cached_time then 'yes' else 'no' end as ran_after_caching,
       total_logical_writes, total_spills, total_page_server_reads
from sys.dm_exec_procedure_stats where database_id = db_id()
go
