-- Databases: CREATE / USE / ALTER / DROP and their errors.
SELECT name FROM sys.databases WHERE name = 'master';
GO
CREATE DATABASE shop;
GO
SELECT name, recovery_model_desc FROM sys.databases WHERE name = 'shop';
GO
CREATE DATABASE shop;
GO
CREATE DATABASE [Shop];
GO
USE shop;
SELECT DB_NAME() AS current_db;
GO
CREATE TABLE items (id int PRIMARY KEY, name varchar(20));
INSERT INTO items VALUES (1, 'pen');
SELECT * FROM shop.dbo.items;
GO
USE master;
SELECT * FROM shop.dbo.items;
SELECT * FROM shop..items;
INSERT INTO shop.dbo.items VALUES (2, 'ink');
SELECT COUNT(*) AS n FROM shop.dbo.items;
GO
USE nosuchdb;
GO
SELECT DB_NAME() AS still_here;
GO
ALTER DATABASE shop SET RECOVERY FULL;
SELECT name, recovery_model_desc FROM sys.databases WHERE name = 'shop';
GO
ALTER DATABASE shop SET RECOVERY BULK_LOGGED;
SELECT name, recovery_model_desc FROM sys.databases WHERE name = 'shop';
GO
ALTER DATABASE shop SET RECOVERY SIMPLE;
SELECT name, recovery_model_desc FROM sys.databases WHERE name = 'shop';
GO
ALTER DATABASE shop SET DELAYED_DURABILITY = FORCED;
SELECT name, delayed_durability_desc FROM sys.databases WHERE name = 'shop';
ALTER DATABASE shop SET DELAYED_DURABILITY = ALLOWED;
SELECT name, delayed_durability_desc FROM sys.databases WHERE name = 'shop';
GO
USE shop;
BEGIN TRANSACTION;
INSERT INTO items VALUES (3, 'pad');
COMMIT TRANSACTION WITH (DELAYED_DURABILITY = ON);
SELECT COUNT(*) AS n FROM items;
GO
ALTER DATABASE shop SET DELAYED_DURABILITY = DISABLED;
SELECT name, delayed_durability_desc FROM sys.databases WHERE name = 'shop';
GO
ALTER DATABASE nosuchdb SET RECOVERY FULL;
GO
DROP DATABASE shop;
GO
USE master;
DROP DATABASE shop;
SELECT COUNT(*) AS n FROM sys.databases WHERE name = 'shop';
GO
DROP DATABASE shop;
GO
DROP DATABASE IF EXISTS shop;
GO
CREATE DATABASE filed
ON (NAME = filed_data, FILENAME = '/tmp/tessera_golden_filed.mdf', SIZE = 8MB)
LOG ON (NAME = filed_log, FILENAME = '/tmp/tessera_golden_filed_log.ldf');
GO
SELECT name FROM sys.databases WHERE name = 'filed';
USE filed;
CREATE TABLE t (a int);
INSERT INTO t VALUES (1);
SELECT a FROM t;
USE master;
GO
CREATE DATABASE thief ON (NAME = thief, FILENAME = '/tmp/tessera_golden_filed.mdf');
GO
SELECT COUNT(*) AS n FROM thief.sys.objects;
SELECT COUNT(*) AS n FROM filed.dbo.t;
DROP DATABASE filed;
GO
-- File sizes: SIZE, MAXSIZE and FILEGROWTH honoured (sizes in 8 KiB pages).
CREATE DATABASE sized ON PRIMARY (NAME = sized, SIZE = 2MB, MAXSIZE = 10MB, FILEGROWTH = 1MB)
    LOG ON (NAME = sized_log, SIZE = 1MB, MAXSIZE = UNLIMITED, FILEGROWTH = 10%);
SELECT file_id, type_desc, name, size, max_size, growth, is_percent_growth FROM sized.sys.database_files;
GO
CREATE DATABASE plain;
SELECT f.file_id, f.type_desc, f.size, f.max_size, f.growth, f.is_percent_growth
FROM sys.master_files f JOIN sys.databases d ON d.database_id = f.database_id WHERE d.name = 'plain';
GO
CREATE DATABASE tiny ON (NAME = tiny, SIZE = 256KB);
GO
CREATE DATABASE upside ON (NAME = upside, SIZE = 10MB, MAXSIZE = 5MB);
GO
CREATE DATABASE leap LOG ON (NAME = leap_log, MAXSIZE = 5MB, FILEGROWTH = 6MB);
GO
CREATE DATABASE twofiles ON (NAME = a, SIZE = 1MB), (NAME = b, SIZE = 1MB);
GO
CREATE DATABASE typo ON (NAME = typo, SIZ = 1MB);
GO
SELECT COUNT(*) AS n FROM sys.databases WHERE name IN ('tiny', 'upside', 'leap', 'twofiles', 'typo');
GO
ALTER DATABASE sized MODIFY FILE (NAME = sized, MAXSIZE = 20MB, FILEGROWTH = 25%);
ALTER DATABASE sized MODIFY FILE (NAME = sized_log, FILEGROWTH = 512KB);
SELECT file_id, size, max_size, growth, is_percent_growth FROM sized.sys.database_files;
GO
ALTER DATABASE sized MODIFY FILE (NAME = nosuch, MAXSIZE = 20MB);
GO
ALTER DATABASE sized MODIFY FILE (NAME = sized);
GO
ALTER DATABASE sized MODIFY FILE (NAME = sized, MAXSIZE = 1MB);
GO
ALTER DATABASE sized MODIFY FILE (NAME = sized, SIZE = 1MB);
GO
DROP DATABASE sized;
DROP DATABASE plain;
GO
-- tempdb is made afresh at every start, in SIMPLE recovery; its recovery model is fixed.
SELECT name, recovery_model_desc FROM sys.databases WHERE name = 'tempdb';
GO
ALTER DATABASE tempdb SET RECOVERY FULL;
GO
-- A table of a database that does not exist is an invalid object (208), as in SQL Server.
select * from no_such_database.dbo.t;
go
-- Empty leading parts name the current database and the default schema.
create table dotted (id int);
insert into ..dotted values (1);
select id from ..[dotted];
select count(*) from .dbo.dotted;
drop table dotted;
go

-- Ids as SQL Server numbers them: master 1, tempdb 2, (model 3), msdb 4, user databases
-- from 5, so that `database_id > 4` lists exactly the user databases.
create database numbered;
select name, database_id from sys.databases where database_id <= 4 order by database_id;
select count(*) as user_ids_below_5 from sys.databases where name not in ('master', 'tempdb', 'msdb') and database_id <= 4;
select case when db_id('numbered') > 4 then 'user' else 'system' end as numbered_is;
drop database numbered;
go
