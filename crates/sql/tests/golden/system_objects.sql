-- The system views as objects (tools that list every object read these): sys.system_objects
-- and sys.system_columns describe the system views, with negative object ids and
-- is_ms_shipped = 1; sys.all_objects and sys.all_columns are the database's own objects
-- and columns, then the system ones.
create table widgets (id int primary key, label nvarchar(40) null);
go
select name, type, type_desc, schema_id, is_ms_shipped, case when object_id < 0 then 'negative' end as id_sign
from sys.system_objects where name in ('objects', 'tables', 'schemas') order by name;
select c.column_id, c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable, c.collation_name
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id
where o.name = 'schemas' order by c.column_id;
select name, type, is_ms_shipped from sys.all_objects where name in ('widgets', 'objects') order by is_ms_shipped, name;
select o.name as object, c.name as col from sys.all_columns c join sys.all_objects o on o.object_id = c.object_id
where o.name in ('widgets', 'databases') and c.column_id <= 2 order by o.is_ms_shipped, c.column_id;
-- no object of the database's own is counted as a system one, and every system view is one
select (select count(*) from sys.objects) + (select count(*) from sys.system_objects) - (select count(*) from sys.all_objects) as difference;
select count(*) as user_rows_marked_shipped from sys.all_objects where object_id > 0 and is_ms_shipped = 1;
go
-- sys.system_views and sys.all_views; the catalogs of kinds of objects tessera has none of
-- yet, with SQL Server's columns (Flyway's clean reads each); sys.sysusers; what sys.tables,
-- sys.columns and sys.types say of tessera's tables, columns and types.
create view widget_labels as select label from widgets;
go
select name, type from sys.system_views where name in ('tables', 'columns') order by name;
select name, type, is_ms_shipped from sys.all_views where name in ('widget_labels', 'views') order by is_ms_shipped, name;
SELECT count(*) AS user_types FROM ( SELECT t.name FROM sys.types t INNER JOIN sys.schemas s ON t.schema_id = s.schema_id WHERE t.is_user_defined = 1 AND s.name = 'dbo' Union SELECT name FROM sys.assemblies WHERE is_user_defined=1) R;
SELECT name FROM sys.xml_schema_collections WHERE schema_id = SCHEMA_ID('dbo');
SELECT name AS queue_name, object_id AS queue_id FROM sys.service_queues WHERE schema_id = schema_id('dbo') AND is_ms_shipped = 0;
SELECT name FROM sys.services WHERE service_queue_id IN (1, 2);
SELECT name FROM sys.partition_schemes;
SELECT name FROM sys.partition_functions;
SELECT name, base_object_name FROM sys.synonyms;
SELECT name, type_table_object_id, is_table_type FROM sys.table_types;
SELECT temporal_type, temporal_type_desc, lob_data_space_id, max_column_id_used, lock_escalation_desc, durability_desc, is_memory_optimized
FROM sys.tables WHERE object_id = OBJECT_ID('widgets', 'U');
SELECT c.name, c.is_ansi_padded, c.is_rowguidcol, c.is_filestream, c.is_sparse, c.generated_always_type_desc, c.is_hidden
FROM sys.columns c WHERE c.object_id = OBJECT_ID('widgets') ORDER BY c.column_id;
SELECT name, schema_id, principal_id, collation_name, is_assembly_type, is_table_type FROM sys.types WHERE name IN ('int', 'nvarchar', 'sysname') ORDER BY name;
SELECT name, uid, gid, hasdbaccess, islogin, issqluser, issqlrole, isapprole FROM sys.sysusers WHERE name IN ('dbo', 'guest', 'public', 'db_owner', 'sys') ORDER BY uid;
drop view widget_labels;
go
-- Where rows are kept: one partition per index, its in-row pages, and each index's
-- statistics on its key columns.
create table stored (id int primary key, code char(3) not null, note varchar(20));
create index ix_stored_code on stored (code desc, note);
create table heaped (a int);
insert stored values (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', null);
insert heaped values (1), (2);
go
select object_name(p.object_id) as tbl, p.index_id, p.partition_number, p.rows, p.data_compression_desc,
  case when p.hobt_id = p.partition_id then 'same' end as hobt
from sys.partitions p where p.object_id in (object_id('stored'), object_id('heaped')) order by tbl, p.index_id;
select object_name(p.object_id) as tbl, p.index_id, a.type_desc, case when a.total_pages >= 1 and a.used_pages = a.total_pages then 'counted' end as pages
from sys.allocation_units a join sys.partitions p on p.hobt_id = a.container_id
where p.object_id in (object_id('stored'), object_id('heaped')) order by tbl, p.index_id;
select object_name(s.object_id) as tbl, s.name, s.stats_id, s.auto_created, s.user_created, s.has_filter
from sys.stats s where s.object_id in (object_id('stored'), object_id('heaped')) order by tbl, s.stats_id;
select s.name, sc.stats_column_id, col_name(sc.object_id, sc.column_id) as col
from sys.stats_columns sc join sys.stats s on s.object_id = sc.object_id and s.stats_id = sc.stats_id
where sc.object_id = object_id('stored') order by s.stats_id, sc.stats_column_id;
drop table stored;
drop table heaped;
go
-- A system view is an object: OBJECT_ID finds it by its schema-qualified name (not by its
-- name alone), and OBJECT_NAME and OBJECT_SCHEMA_NAME name it back.
select case when object_id('sys.objects') < 0 then 'negative' end as sys_objects,
       case when object_id('master.sys.dm_exec_requests') = (select object_id from sys.system_objects where name = 'dm_exec_requests') then 'same' end as dm_exec_requests,
       object_name(object_id('sys.query_store_query')) as by_id,
       object_schema_name(object_id('INFORMATION_SCHEMA.TABLES')) as info_schema,
       object_id('objects') as unqualified;
go
