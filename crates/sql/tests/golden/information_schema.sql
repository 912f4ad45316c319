-- The INFORMATION_SCHEMA views, with SQL Server's columns.
create table parent (id int not null, code char(4) not null, constraint pk_parent primary key (id), constraint uq_parent_code unique (code));
create table child (
  id int identity primary key,
  parent_id int not null,
  code char(4) null,
  amount decimal(10,2) not null default 0,
  ratio float null, small real null, price money null, flag bit null,
  born date null, seen datetime null, at2 datetime2(3) null, t5 time(5) null,
  name varchar(20) null, body nvarchar(max) null, bin varbinary(16) null, guid uniqueidentifier null,
  constraint fk_child_parent foreign key (parent_id) references parent (id) on delete cascade,
  constraint fk_child_code foreign key (code) references parent (code),
  constraint ck_child_amount check (amount >= 0 and [ratio] < abs(amount) + 1)
);
go
create view v_child as select id, name from child where flag = 1 with check option;
go
create procedure p_child @id int as select * from child where id = @id;
go
create function f_double (@x int) returns int as begin return @x * 2 end;
go
select table_catalog, table_schema, table_name, table_type from information_schema.tables order by table_name;
select column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, character_octet_length,
  numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision, character_set_name, collation_name
from information_schema.columns where table_name = 'child' order by ordinal_position;
select table_name, check_option, is_updatable, view_definition from information_schema.views;
select routine_name, routine_type, data_type from information_schema.routines order by routine_name;
select specific_name, ordinal_position, parameter_mode, is_result, parameter_name, data_type, numeric_precision
from information_schema.parameters order by specific_name, ordinal_position;
select schema_name, schema_owner, default_character_set_name from information_schema.schemata where schema_name in ('dbo', 'guest', 'sys', 'INFORMATION_SCHEMA') order by schema_name;
select constraint_name, table_name, constraint_type, is_deferrable, initially_deferred from information_schema.table_constraints order by table_name, constraint_name;
select constraint_name, table_name, column_name, ordinal_position from information_schema.key_column_usage order by table_name, constraint_name, ordinal_position;
select constraint_name, unique_constraint_name, match_option, update_rule, delete_rule from information_schema.referential_constraints order by constraint_name;
select table_name, column_name, constraint_name from information_schema.constraint_column_usage order by constraint_name, column_name;
select table_name, constraint_name from information_schema.constraint_table_usage order by constraint_name;
select constraint_name, check_clause from information_schema.check_constraints;
select count(*) as sequences from information_schema.sequences;
select object_name(object_id) as table_name, name, seed_value, increment_value, last_value, is_not_for_replication from sys.identity_columns;
insert parent values (1, 'p1');
insert child (parent_id, code) values (1, 'p1'), (1, 'p1');
select object_name(object_id) as table_name, name, last_value from sys.identity_columns;
select count(*) as computed from sys.computed_columns;
-- What Sequelize's describeTable joins.
select c.column_name, c.data_type, tc.constraint_type
from information_schema.columns c
left join information_schema.key_column_usage k on k.table_name = c.table_name and k.column_name = c.column_name
left join information_schema.table_constraints tc on tc.constraint_name = k.constraint_name and tc.constraint_type = 'PRIMARY KEY'
where c.table_name = 'parent' order by c.ordinal_position;
drop view v_child;
drop procedure p_child;
drop function f_double;
drop table child;
drop table parent;
go
-- The sp_help family.
create table parent (id int not null, code char(4) not null, constraint pk_parent primary key (id), constraint uq_parent_code unique nonclustered (code));
create table child (
  id int not null primary key,
  parent_id int not null constraint fk_child_parent foreign key references parent (id) on delete cascade on update set null,
  amount decimal(10,2) not null constraint df_amount default 0 constraint ck_amount check (amount >= 0),
  ratio float null,
  constraint ck_ratio check (ratio < amount)
);
create index ix_child_amount on child (amount desc, ratio);
create table bare (a int);
go
create view v_parent as
select id, code
from parent;
go
exec sp_helpindex 'child';
exec sp_helpindex 'dbo.parent';
exec sp_helpindex 'bare';
exec sp_helpconstraint 'child';
exec sp_helpconstraint 'dbo.parent', 'nomsg';
exec sp_helpconstraint 'bare', 'nomsg';
exec sp_helptext 'v_parent';
exec sp_helptext 'ck_ratio';
-- Properties of objects by id.
select objectproperty(object_id('child'), 'IsUserTable') as is_table, objectproperty(object_id('child'), 'TableHasPrimaryKey') as has_pk,
  objectproperty(object_id('child'), 'TableHasForeignKey') as has_fk, objectproperty(object_id('parent'), 'TableHasForeignRef') as has_ref,
  objectproperty(object_id('bare'), 'TableHasClustIndex') as bare_clust, objectproperty(object_id('child'), 'TableHasIdentity') as has_identity,
  objectproperty(object_id('v_parent'), 'IsView') as is_view, objectproperty(object_id('ck_ratio'), 'IsCheckCnst') as is_check,
  objectproperty(object_id('child'), 'NoSuchProperty') as unknown, objectproperty(-5, 'IsTable') as no_object,
  objectpropertyex(object_id('v_parent'), 'BaseType') as base_type, objectpropertyex(object_id('child'), 'IsTable') as ex_is_table;
select object_schema_name(object_id('child')) as schema_name, object_definition(object_id('v_parent')) as definition,
  object_definition(object_id('ck_amount')) as check_text, object_definition(object_id('child')) as table_text;
select col_name(object_id('child'), 1) as first_column, col_name(object_id('child'), 99) as no_column,
  col_name(object_id('v_parent'), 1) as of_a_view, object_name(object_id('ck_amount')) as constraint_name,
  object_name(object_id('child'), db_id()) as in_this_db, object_name(-5) as no_object;
select columnproperty(object_id('child'), 'amount', 'Precision') as amount_precision, columnproperty(object_id('child'), 'amount', 'Scale') as amount_scale,
  columnproperty(object_id('child'), 'id', 'AllowsNull') as id_nullable, columnproperty(object_id('child'), 'ratio', 'ColumnId') as ratio_id,
  columnproperty(object_id('child'), 'ratio', 'IsPrecise') as ratio_precise, columnproperty(object_id('parent'), 'code', 'charmaxlen') as code_chars,
  columnproperty(object_id('child'), 'id', 'IsIdentity') as id_identity, columnproperty(object_id('child'), 'nope', 'ColumnId') as no_column;
select indexproperty(object_id('child'), 'ix_child_amount', 'IsClustered') as is_clustered, indexproperty(object_id('child'), 'ix_child_amount', 'IsUnique') as is_unique,
  indexproperty(object_id('child'), 'ix_child_amount', 'IndexID') as index_id,
  indexkey_property(object_id('child'), 2, 1, 'ColumnId') as key1_column, indexkey_property(object_id('child'), 2, 1, 'IsDescending') as key1_desc,
  indexkey_property(object_id('child'), 2, 2, 'IsDescending') as key2_desc, indexkey_property(object_id('child'), 2, 3, 'ColumnId') as no_key;
select typeproperty('int', 'Precision') as int_precision, typeproperty('varchar', 'Precision') as varchar_precision,
  typeproperty('datetime', 'Precision') as datetime_precision, typeproperty('decimal', 'Scale') as decimal_scale,
  typeproperty('int', 'AllowsNull') as allows_null, typeproperty('nosuchtype', 'Precision') as no_type;
go
exec sp_helptext 'bare';
go
exec sp_helpindex 'nope';
go
drop view v_parent;
drop table child;
drop table parent;
drop table bare;
go
-- The filegroup every table is on; the kinds of objects tessera has none of yet.
select name, data_space_id, type, type_desc, is_default from sys.data_spaces;
select name, type_desc, is_read_only from sys.filegroups;
select (select count(*) from sys.sequences) as sequences, (select count(*) from sys.triggers) as triggers;
go
-- Views' columns (in sys.columns and COLUMNS, as their definitions bind), what views
-- read, the columns an inline table-valued function returns, and privileges.
create table item (id int primary key, label nvarchar(30) not null, cost decimal(9,2) null, hidden int);
go
create view v_item as select i.id, upper(i.label) as shout, i.cost * 2 as double_cost from item i where i.hidden = 0;
go
create function f_items (@min decimal(9,2)) returns table as return select id, label from item where cost >= @min;
go
create user auditor without login;
grant select on item to auditor with grant option;
grant update (label) on item to auditor;
grant select on v_item to public;
go
select c.name, c.column_id, type_name(c.system_type_id) as type, c.max_length, c.precision, c.scale, c.is_nullable
from sys.columns c where c.object_id = object_id('v_item') order by c.column_id;
select column_name, ordinal_position, data_type, is_nullable, numeric_precision, numeric_scale, character_maximum_length
from information_schema.columns where table_name = 'v_item' order by ordinal_position;
select col_name(object_id('v_item'), 2) as second_column;
select view_name, table_catalog, table_schema, table_name from information_schema.view_table_usage where view_name in ('v_item', 'v_parent') order by view_name;
select view_name, table_name, column_name from information_schema.view_column_usage where view_name = 'v_item' order by column_name;
select table_name, column_name, ordinal_position, data_type, is_nullable from information_schema.routine_columns order by table_name, ordinal_position;
select grantor, grantee, table_name, privilege_type, is_grantable from information_schema.table_privileges order by table_name, grantee, privilege_type;
select grantor, grantee, table_name, column_name, privilege_type, is_grantable from information_schema.column_privileges order by table_name, grantee, privilege_type, column_name;
select (select count(*) from information_schema.domains) as domains, (select count(*) from information_schema.column_domain_usage) as column_domains;
go
create procedure p_item @id int as
begin
  select label from item where id = @id;
  update dbo.item set cost = cost * 2 where id = @id;
  insert into nowhere (a) values (1);
  exec p_missing;
  exec sp_help 'item';
end;
go
select object_name(referencing_id) as referencing, referencing_class_desc, referenced_database_name, referenced_schema_name,
  referenced_entity_name, object_name(referenced_id) as referenced, is_caller_dependent, is_ambiguous
from sys.sql_expression_dependencies order by referencing, referenced_entity_name;
exec sp_depends 'v_item';
exec sp_depends 'p_item';
exec sp_depends 'item';
exec sp_depends 'f_items';
go
create table lonely (a int);
exec sp_depends 'lonely';
drop table lonely;
drop procedure p_item;
go
exec sp_depends 'nosuch';
go
go
