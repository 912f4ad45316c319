-- DDL is not yet part of the session's transaction (issue 34): it takes effect at once.
-- A table the open transaction has changed is therefore refused to DDL (574): its
-- rollback would have undone rows in trees the DDL dropped or rebuilt (this used to end
-- in error 824 and a hung session).
create table tr (a int);
create table other (a int);
go
begin tran;
insert tr values (1);
go
drop table tr;
go
truncate table tr;
go
create index ix_a on tr (a);
go
alter table tr add b int;
go
-- A table the transaction has not changed: DDL goes on as before (at once).
drop table other;
go
rollback;
go
select @@trancount as trancount, object_id('tr') as tr_kept, object_id('other') as other_dropped;
select count(*) as rows_after_rollback from tr;
go
-- Outside a transaction nothing changes.
insert tr values (2);
drop table tr;
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
