-- Extended properties: sp_addextendedproperty, sp_updateextendedproperty and
-- sp_dropextendedproperty on the database, a schema, objects and their columns, indexes,
-- constraints and parameters; sys.extended_properties and fn_listextendedproperty; what
-- renames, ALTERs, drops and rollbacks do to them; SQL Server's errors.
create table t (id int primary key, c nvarchar(10), d int constraint ck_d check (d > 0));
create index ix_c on t (c);
go
create procedure p @a int, @b int = 2 as select @a + @b as s;
go
create view v as select id, c from t;
go
exec sp_addextendedproperty 'MS_Description', N'the table', 'schema', 'dbo', 'table', 't';
exec sp_addextendedproperty @name = N'MS_Description', @value = N'a column', @level0type = N'Schema', @level0name = 'dbo',
    @level1type = N'Table', @level1name = 't', @level2type = N'Column', @level2name = 'c';
exec sp_addextendedproperty 'Note', 'on an index', 'SCHEMA', 'dbo', 'TABLE', 't', 'INDEX', 'ix_c';
exec sp_addextendedproperty 'Note', 'on a check', 'SCHEMA', 'dbo', 'TABLE', 't', 'CONSTRAINT', 'ck_d';
exec sp_addextendedproperty 'Note', 'on a parameter', 'SCHEMA', 'dbo', 'PROCEDURE', 'p', 'PARAMETER', '@b';
exec sp_addextendedproperty 'Note', 'on a view', 'SCHEMA', 'dbo', 'VIEW', 'v';
exec sp_addextendedproperty 'Version', 42, 'SCHEMA', 'dbo';
exec sp_addextendedproperty 'Owner', N'the team';
exec sp_addextendedproperty 'Empty', NULL, 'SCHEMA', 'dbo', 'TABLE', 't', 'COLUMN', 'id';
go
select ep.class, ep.class_desc, ep.minor_id, ep.name, ep.value,
       coalesce(object_name(ep.major_id), schema_name(ep.major_id)) as what
from sys.extended_properties ep
order by ep.class, ep.name, ep.minor_id;
select * from fn_listextendedproperty(NULL, 'schema', 'dbo', 'table', 't', 'column', NULL) order by objname;
select objtype, objname, cast(value as nvarchar(100)) as comment
from fn_listextendedproperty('MS_Description', 'schema', 'dbo', 'table', 't', NULL, NULL);
select objtype, objname, name from sys.fn_listextendedproperty(default, 'schema', 'dbo', 'table', default, default, default);
-- GORM names the database in front.
select objtype, objname, name from master.sys.fn_listextendedproperty('MS_Description', 'SCHEMA', 'dbo', 'TABLE', 't', 'COLUMN', 'c');
select objtype, objname, name, value from fn_listextendedproperty(default, default, default, default, default, default, default);
select objtype, objname, name, value from fn_listextendedproperty(NULL, 'schema', NULL, NULL, NULL, NULL, NULL);
-- A level above the last without a name lists nothing.
select count(*) as n from fn_listextendedproperty(NULL, 'schema', NULL, 'table', 't', NULL, NULL);
-- SQLAlchemy reads column comments joining sys.extended_properties.
select c.name, cast(ep.value as nvarchar(4000)) as comment
from sys.columns c
left join sys.extended_properties ep
  on ep.class = 1 and ep.major_id = c.object_id and ep.minor_id = c.column_id and ep.name = 'MS_Description'
where c.object_id = object_id('t')
order by c.column_id;
go
exec sp_addextendedproperty 'MS_Description', N'again', 'schema', 'dbo', 'table', 't';
go
exec sp_updateextendedproperty 'Nope', N'x', 'schema', 'dbo', 'table', 't';
go
exec sp_dropextendedproperty 'Nope', 'schema', 'dbo', 'table', 't';
go
exec sp_addextendedproperty 'X', N'v', 'schema', 'dbo', 'table', 'nosuch';
go
exec sp_addextendedproperty 'X', N'v', 'schema', 'dbo', 'view', 't';
go
exec sp_addextendedproperty 'X', N'v', 'schema', 'dbo', 'table', 't', 'column', 'nosuch';
go
exec sp_addextendedproperty 'X', N'v', 'schema', 'nosuch';
go
exec sp_addextendedproperty 'X', N'v', NULL, NULL, 'table', 't';
go
exec sp_addextendedproperty 'X', N'v', 'schema', 'dbo', 'table', 't', 'column', 'c', 'extra';
go
declare @big nvarchar(max) = replicate(cast(N'x' as nvarchar(max)), 3751);
exec sp_addextendedproperty 'Big', @big, 'schema', 'dbo', 'table', 't';
go
exec sp_updateextendedproperty 'MS_Description', N'changed', 'schema', 'dbo', 'table', 't';
exec sp_updateextendedproperty @name = 'Version', @value = 43, @level0type = 'schema', @level0name = 'dbo';
exec sp_dropextendedproperty 'Owner';
select class, name, value from sys.extended_properties where class in (0, 3) or minor_id = 0 and class = 1 order by class, name;
go
-- A view's column and a sequence have properties too.
create sequence seq_props;
exec sp_addextendedproperty 'MS_Description', N'the view''s id', 'schema', 'dbo', 'view', 'v', 'column', 'id';
exec sp_addextendedproperty 'MS_Description', N'numbers', 'schema', 'dbo', 'sequence', 'seq_props';
select objtype, objname, value from fn_listextendedproperty(NULL, 'schema', 'dbo', 'view', 'v', 'column', NULL);
select objtype, objname, value from fn_listextendedproperty(NULL, 'schema', 'dbo', 'sequence', NULL, NULL, NULL);
select ep.minor_id, ep.value from sys.extended_properties ep where ep.major_id = object_id('v') and ep.minor_id > 0;
drop sequence seq_props;
go
-- A rename keeps the property; a rollback puts a dropped one back.
exec sp_rename 't.c', 'c2', 'COLUMN';
exec sp_rename 't.ix_c', 'ix_c2', 'INDEX';
exec sp_rename 'ck_d', 'ck_d2';
go
select objtype, objname, name from fn_listextendedproperty(NULL, 'schema', 'dbo', 'table', 't', 'column', NULL)
union all select objtype, objname, name from fn_listextendedproperty(NULL, 'schema', 'dbo', 'table', 't', 'index', NULL)
union all select objtype, objname, name from fn_listextendedproperty(NULL, 'schema', 'dbo', 'table', 't', 'constraint', NULL)
order by 1, 2, 3;
begin transaction;
exec sp_dropextendedproperty 'MS_Description', 'schema', 'dbo', 'table', 't';
select count(*) as inside from sys.extended_properties where major_id = object_id('t') and minor_id = 0;
rollback;
select count(*) as after_rollback from sys.extended_properties where major_id = object_id('t') and minor_id = 0;
go
-- An ALTER keeps a module's properties; dropping a part takes its properties with it.
alter procedure p @a int, @b int = 3 as select @a * @b as s;
go
select objname, name, value from fn_listextendedproperty(NULL, 'schema', 'dbo', 'procedure', 'p', 'parameter', NULL);
drop index ix_c2 on t;
alter table t drop constraint ck_d2;
alter table t drop column c2;
alter table t add c2 nvarchar(10);
go
select class, name, minor_id from sys.extended_properties where major_id = object_id('t') order by class, minor_id;
drop table t;
drop view v;
select class, name from sys.extended_properties order by class, name;
go
