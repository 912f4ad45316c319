-- The columns of the DMVs operators read, as SQL Server documents them: name, type,
-- length and nullability, in order.
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_exec_requests' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_tran_locks' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_os_wait_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_exec_session_wait_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_log_space_usage' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_file_space_usage' order by c.column_id
go
-- Every wait type tessera records starts at zero or more, each listed once.
select count(*) as wait_types, count(distinct wait_type) as distinct_types from sys.dm_os_wait_stats
go
select wait_type from sys.dm_os_wait_stats order by wait_type
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_tran_active_transactions' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_tran_session_transactions' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_tran_database_transactions' order by c.column_id
go
-- sys.dm_io_virtual_file_stats is a function (sys.system_columns lists views): its columns as described.
select name, system_type_name, max_length, is_nullable
from sys.dm_exec_describe_first_result_set(N'select * from sys.dm_io_virtual_file_stats(null, null)', null, 0) order by column_ordinal
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_index_usage_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_missing_index_details' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_missing_index_groups' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_db_missing_index_group_stats' order by c.column_id
go
-- sys.dm_db_index_operational_stats is a function: its columns as described.
select name, system_type_name, max_length, is_nullable
from sys.dm_exec_describe_first_result_set(N'select * from sys.dm_db_index_operational_stats(null, null, null, null)', null, 0) order by column_ordinal
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_exec_query_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'database_query_store_options' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_query_text' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_query' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_plan' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_runtime_stats_interval' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_runtime_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_store_wait_stats' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'query_context_settings' order by c.column_id
go
