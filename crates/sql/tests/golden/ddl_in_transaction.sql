-- DDL goes with the session's transaction (issue 34): a ROLLBACK takes a new table, index,
-- column, view, procedure or function out again, brings a dropped or truncated table back
-- with its rows, puts a dropped column back and an altered module's old text; a COMMIT
-- makes the changes final.
create table tr (a int);
insert tr values (1), (2);
create table other (a int);
insert other values (7);
go
begin tran;
insert tr values (3);
truncate table tr;
select count(*) as after_truncate from tr;
create index ix_a on tr (a);
alter table tr add b int;
go
alter table tr drop column b;
go
insert tr values (4);
go
-- DDL on a table this transaction changed reads the rows (its own uncommitted ones
-- among them) in this transaction, as SQL Server's does; a rollback takes the index away.
create index ix_b on tr (a);
go
drop table other;
create table fresh (x int);
insert fresh values (1);
select object_id('other') as other_gone, object_id('fresh') as fresh_there, (select count(*) from tr) as tr_rows;
go
rollback;
go
select @@trancount as trancount, object_id('fresh') as fresh_gone;
select a from tr order by a;
select count(*) as named_indexes from sys.indexes where object_id = object_id('tr') and name is not null;
select name from sys.columns where object_id = object_id('tr');
select a as other_rows from other;
go
-- Committed: final.
begin tran;
truncate table tr;
create index ix_a on tr (a);
commit;
select count(*) as tr_rows from tr;
select name from sys.indexes where object_id = object_id('tr') and name = 'ix_a';
go
-- A temporary table's DDL is final at once (as before): refused (574) on a temporary
-- table the open transaction has changed, whose rollback would find its trees gone.
create table #tmp (a int);
begin tran;
insert #tmp values (1);
truncate table #tmp;
go
rollback;
drop table #tmp;
go
-- A savepoint: what came after it is undone, what came before stays for the COMMIT.
begin tran;
drop table other;
save tran sp;
create table later (x int);
rollback tran sp;
select object_id('later') as later_gone, object_id('other') as other_gone;
commit;
select object_id('other') as other_dropped;
go
-- Dropped and made again under the same name, then rolled back: the first one is back.
create table tt (a int);
insert tt values (1);
go
begin tran;
drop table tt;
create table tt (b varchar(10));
insert tt values ('new');
rollback;
select * from tt;
go
-- An error in a later statement leaves the transaction's DDL to its end.
create table kept (x int);
insert kept values (9);
go
begin tran;
drop table kept;
select 1 / 0;
go
select object_id('kept') as kept_gone, @@trancount as trancount;
rollback;
select x as kept_back from kept;
drop table kept;
go
-- Views, procedures and functions: created, altered and dropped with the transaction.
create view v_keep as select 1 as one;
go
create procedure p_keep as select 'old' as body;
go
begin tran;
go
create view v_new as select 2 as two;
go
create procedure p_new as select 'new' as body;
go
create function f_new() returns int as begin return 42 end;
go
alter procedure p_keep as select 'altered' as body;
go
drop view v_keep;
go
exec p_keep;
select dbo.f_new() as f_new, (select two from v_new) as v_new, object_id('v_keep') as v_keep_gone;
go
rollback;
go
exec p_keep;
select one from v_keep;
select object_id('v_new') as v_new_gone, object_id('p_new') as p_new_gone, object_id('f_new') as f_new_gone;
select count(*) as modules_in_sys from sys.sql_modules where object_id in (object_id('v_new'), object_id('p_new'));
go
begin tran;
go
create table committed_t (x int primary key);
insert committed_t values (5);
go
create procedure p_committed as select x from committed_t;
go
commit;
exec p_committed;
drop procedure p_committed;
drop procedure p_keep;
drop view v_keep;
drop table committed_t;
go
-- Dropped and made again in one transaction, the same statements run on the new table
-- (a plan bound against the dropped one is not taken for it); a table whose referencing
-- table the transaction dropped may be dropped too.
begin tran;
create table again (a int);
insert again values (1);
select a from again;
go
drop table again;
create table again (a int);
insert again values (2);
go
select a from again;
go
create table parent_t (id int primary key);
create table child_t (id int references parent_t (id));
insert parent_t values (1);
insert child_t values (1);
go
drop table child_t;
delete parent_t;
drop table parent_t;
select object_id('parent_t') as parent_gone, object_id('child_t') as child_gone;
rollback;
select object_id('again') as again_gone;
go
-- Schemas, users, roles and permissions go with the transaction too.
begin tran;
go
create schema s_tx;
go
create role r_tx;
create user u_tx without login;
alter role r_tx add member u_tx;
grant select to r_tx;
create table s_tx.in_schema (a int);
select (select count(*) from sys.schemas where name = 's_tx') as schemas,
       (select count(*) from sys.database_principals where name in ('r_tx', 'u_tx')) as principals;
go
rollback;
select (select count(*) from sys.schemas where name = 's_tx') as schemas_after,
       (select count(*) from sys.database_principals where name in ('r_tx', 'u_tx')) as principals_after,
       (select count(*) from sys.database_permissions p join sys.database_principals r on r.principal_id = p.grantee_principal_id where r.name = 'r_tx') as grants_after;
go
begin tran;
create role r_kept;
commit;
select count(*) as committed_role from sys.database_principals where name = 'r_kept';
drop role r_kept;
go
-- Outside a transaction: at once.
drop table tr;
drop table tt;
select object_id('tr') as dropped;
go
-- Databases are made, changed and dropped outside any transaction (226, 574), as in SQL Server.
create database txdb;
go
begin tran;
create database txdb2;
go
alter database txdb set recovery simple;
go
drop database txdb;
go
rollback;
select name from sys.databases where name like 'txdb%';
drop database txdb;
go
-- A migration tool's step (Flyway's baseline): a table made, written, then given a key
-- and an index in one transaction; committed, and once more rolled back.
begin tran;
create table history (installed_rank int not null, version nvarchar(50), success bit not null);
insert history values (1, '0', 1), (2, '1', 1);
alter table history add constraint history_pk primary key (installed_rank);
create index history_s_idx on history (success);
alter table history add checksum int null constraint ck_checksum check (checksum <> 0);
insert history (installed_rank, version, success) values (3, '2', 0);
commit;
select installed_rank, version, success from history order by installed_rank;
select name from sys.indexes where object_id = object_id('history') order by index_id;
go
begin tran;
insert history (installed_rank, version, success) values (4, '3', 1);
create index history_v_idx on history (version);
alter table history add constraint ck_version check (version <> 'x');
rollback;
select count(*) as rows_after_rollback, (select count(*) from sys.indexes where name = 'history_v_idx') as index_after_rollback from history;
go
begin tran;
insert history (installed_rank, version, success) values (5, 'x', 1);
alter table history add constraint ck_version check (version <> 'x');
go
rollback;
drop table history;
go
