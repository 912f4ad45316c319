-- CREATE TABLE and DROP TABLE go with the session's transaction (issue 34): a ROLLBACK
-- brings a dropped table back with its rows and takes a created one out; a COMMIT makes
-- them final. Other DDL (TRUNCATE, CREATE/DROP INDEX, ALTER TABLE) still takes effect at
-- once, so a table the open transaction has changed is refused to it (574): its rollback
-- would undo rows in trees that DDL replaced.
create table tr (a int);
create table other (a int);
insert other values (7);
go
begin tran;
insert tr values (1);
go
truncate table tr;
go
create index ix_a on tr (a);
go
alter table tr add b int;
go
drop table tr;
drop table other;
create table fresh (x int);
insert fresh values (1);
select object_id('tr') as tr_gone, object_id('other') as other_gone, object_id('fresh') as fresh_there;
go
rollback;
go
select @@trancount as trancount, object_id('fresh') as fresh_gone;
select count(*) as tr_rows from tr;
select a as other_rows from other;
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
begin tran;
create table kept (x int);
select 1 / 0;
go
select object_id('kept') as kept_there, @@trancount as trancount;
rollback;
select object_id('kept') as kept_gone;
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
