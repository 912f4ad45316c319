-- DDL on tables goes with the session's transaction (issue 34): a ROLLBACK brings a
-- dropped or truncated table back with its rows, takes a new index or column out again
-- and puts a dropped column back; a COMMIT makes the changes final. CREATE TABLE is
-- still final at once (other sessions would see a table that may yet vanish), unless it
-- takes the name of a table the transaction dropped.
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
-- ALTER TABLE and indexes may read the rows in a transaction of their own (index builds,
-- constraint checks), which would wait for this one's uncommitted rows: on a table this
-- transaction changed they are refused (574), as before. DROP and TRUNCATE are not.
create index ix_b on tr (a);
go
drop table other;
create table fresh (x int);
insert fresh values (1);
select object_id('other') as other_gone, object_id('fresh') as fresh_there, (select count(*) from tr) as tr_rows;
go
rollback;
go
select @@trancount as trancount, object_id('fresh') as fresh_kept;
drop table fresh;
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
select object_id('later') as later_kept, object_id('other') as other_gone;
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
drop table kept, later;
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
