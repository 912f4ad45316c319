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
DROP DATABASE filed;
GO
