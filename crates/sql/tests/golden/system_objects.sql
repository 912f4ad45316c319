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
