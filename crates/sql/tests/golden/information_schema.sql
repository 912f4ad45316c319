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
select schema_name, schema_owner, default_character_set_name from information_schema.schemata where schema_name in ('dbo', 'guest', 'sys', 'INFORMATION_SCHEMA') order by schema_name;
select constraint_name, table_name, constraint_type, is_deferrable, initially_deferred from information_schema.table_constraints order by table_name, constraint_name;
select constraint_name, table_name, column_name, ordinal_position from information_schema.key_column_usage order by table_name, constraint_name, ordinal_position;
select constraint_name, unique_constraint_name, match_option, update_rule, delete_rule from information_schema.referential_constraints order by constraint_name;
select table_name, column_name, constraint_name from information_schema.constraint_column_usage order by constraint_name, column_name;
select table_name, constraint_name from information_schema.constraint_table_usage order by constraint_name;
select constraint_name, check_clause from information_schema.check_constraints;
select count(*) as sequences from information_schema.sequences;
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
