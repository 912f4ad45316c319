-- sp_rename: tables, modules, constraints, columns and indexes, with SQL Server's caution and errors.
create table t (id int primary key, amount int constraint ck_amount check (amount >= 0), note varchar(10) constraint df_note default 'x');
create index ix_amount on t (amount);
create table child (id int, t_id int constraint fk_t foreign key references t (id));
insert t (id, amount) values (1, 5);
go
create procedure p as select count(*) as n from t;
go
exec sp_rename 't.amount', 'cost', 'COLUMN';
go
select id, cost, note from t;
select constraint_name, check_clause from information_schema.check_constraints;
go
insert t (id, cost) values (2, -1);
go
exec sp_rename 't.ix_amount', 'ix_cost', 'INDEX';
exec sp_helpindex 't';
exec sp_rename 'ck_amount', 'ck_cost';
exec sp_rename 'dbo.df_note', 'df_note2', 'OBJECT';
exec sp_rename 'fk_t', 'fk_child_t';
select constraint_name, table_name, constraint_type from information_schema.table_constraints where constraint_type <> 'PRIMARY KEY' order by constraint_name;
select name from sys.default_constraints;
exec sp_rename 't', 't2';
go
select id, cost from t2;
select case when object_id('t') is null then 'gone' else 'still there' end as old_name;
exec sp_rename 'p', 'p2';
go
-- The procedure still names t, as SQL Server's caution warns.
exec p2;
go
exec p;
go
begin tran;
exec sp_rename 't2', 't3';
exec ('select count(*) as in_tran from t3');
rollback;
select count(*) as after_rollback from t2;
go
exec sp_rename 'nope', 'x';
go
exec sp_rename 't2.nope', 'x', 'COLUMN';
go
exec sp_rename 't2.cost', 'note', 'COLUMN';
go
exec sp_rename 't2', 'child';
go
exec sp_rename 't2', 'x', 'NOSUCHTYPE';
go
-- Without @objtype a column is found by its table (TypeORM's renameColumn), and the
-- current database may be named in front.
exec sp_rename 't2.cost', 'price';
exec sp_rename 'dbo.t2.price', 'cost2';
exec sp_rename "master.dbo.t2.cost2", "cost";
exec sp_rename 'master.dbo.t2.ix_cost', 'ix_cost2', 'INDEX';
select name from sys.columns where object_id = object_id('t2') order by column_id;
go
exec sp_rename 'otherdb.dbo.t2.cost', 'x';
go
exec sp_rename 't2.nothing', 'x';
go
drop procedure p2;
drop table child;
drop table t2;
go
