-- Configuration, DBCC, the plan cache's views and system procedures.
exec sp_configure;
exec sp_configure 'max server memory (MB)';
go
exec sp_configure 'show advanced options', 1;
reconfigure;
exec sp_configure 'max server memory', 2048;
select name, value, value_in_use from sys.configurations where name = 'max server memory (MB)';
reconfigure with override;
select name, value, value_in_use from sys.configurations where name = 'max server memory (MB)';
exec sp_configure 'max server memory (MB)', 64;
exec sp_configure 'max degree of parallelism', -1;
exec sp_configure 'no such option';
exec sp_configure 'm';
exec sp_configure 'backup compression default', 1;
reconfigure;
exec sp_configure 'backup';
go
dbcc traceon (3213, 3605, -1);
dbcc traceon (1222);
dbcc tracestatus;
dbcc traceoff (1222);
dbcc tracestatus (-1);
dbcc traceoff (3213, 3605, -1);
dbcc tracestatus;
dbcc checkdb;
dbcc checkdb (master) with no_infomsgs;
dbcc dropcleanbuffers;
dbcc nonsense;
go
-- The plan cache: a repeated batch is one entry used several times; FREEPROCCACHE empties it.
dbcc freeproccache with no_infomsgs;
go
select 42 as cached;
go 3
select usecounts, cacheobjtype, objtype, cast(text as varchar(30)) as text from sys.dm_exec_cached_plans where text like 'select 42%';
select counter_name from sys.dm_os_performance_counters where object_name like '%Plan Cache%' order by counter_name;
go
-- System procedures.
create table gadgets (id int identity primary key, name varchar(20) not null default 'thing', price decimal(8,2) check (price >= 0));
create index ix_gadgets_name on gadgets (name);
go
-- (sp_help of one table shows its creation time; tests/sysprocs.rs checks it.)
exec sp_help;
exec sp_help nothing_here;
go
exec sp_columns gadgets;
exec sp_tables 'gadg%';
exec sp_who;
go
GO
-- SET FMTONLY ON: result shapes only; nothing is modified.
CREATE TABLE fmt_t (id int PRIMARY KEY, name varchar(10));
INSERT INTO fmt_t VALUES (1, 'one');
SET FMTONLY ON;
SELECT id, name FROM fmt_t;
INSERT INTO fmt_t VALUES (2, 'two');
DELETE FROM fmt_t;
SET FMTONLY OFF;
SELECT id, name FROM fmt_t;
DROP TABLE fmt_t;
GO
