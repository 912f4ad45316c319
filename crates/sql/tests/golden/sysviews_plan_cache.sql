-- The plan cache: repeated batches reuse their plan; schema changes rebind it.
-- (Deviation: the batch text is a `text` column of sys.dm_exec_cached_plans rather than
-- coming from CROSS APPLY sys.dm_exec_sql_text(plan_handle).)
CREATE TABLE pc (a int);
INSERT INTO pc VALUES (1), (2);
GO
SELECT * FROM pc ORDER BY a;
GO
SELECT * FROM pc ORDER BY a;
GO
SELECT usecounts, cacheobjtype, objtype FROM sys.dm_exec_cached_plans WHERE text LIKE 'SELECT * FROM pc ORDER BY a%';
GO
ALTER TABLE pc ADD b varchar(5) NULL;
GO
UPDATE pc SET b = 'x' + CAST(a AS varchar(5));
GO
SELECT * FROM pc ORDER BY a;
GO
SELECT usecounts FROM sys.dm_exec_cached_plans WHERE text LIKE 'SELECT * FROM pc ORDER BY a%';
GO
-- a dropped and recreated table with other columns
DROP TABLE pc;
CREATE TABLE pc (a int, c int);
INSERT INTO pc VALUES (5, 6);
GO
SELECT * FROM pc ORDER BY a;
GO
DROP TABLE pc;
GO
SELECT * FROM pc ORDER BY a;
GO
-- different text is a different plan
select usecounts, objtype from sys.dm_exec_cached_plans where 1 = 0;
GO
SELECT COUNT(*) AS plans FROM sys.dm_exec_cached_plans WHERE text LIKE '%sys.dm_exec_cached_plans where 1 = 0%' AND text NOT LIKE '%NOT LIKE%';
GO
-- catalog views
CREATE TABLE sv (id int PRIMARY KEY, name varchar(10) NOT NULL, note nvarchar(20));
CREATE INDEX ix_sv_name ON sv (name);
GO
SELECT name, type, type_desc FROM sys.tables WHERE name = 'sv';
SELECT c.name, c.column_id, c.is_nullable FROM sys.columns c JOIN sys.tables t ON t.object_id = c.object_id WHERE t.name = 'sv' ORDER BY c.column_id;
SELECT CASE WHEN i.name LIKE 'PK[_][_]sv[_][_]%' THEN 'PK__sv__…' ELSE i.name END AS name, i.type_desc, i.is_unique, i.is_primary_key FROM sys.indexes i JOIN sys.tables t ON t.object_id = i.object_id WHERE t.name = 'sv' ORDER BY i.index_id;
SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'sv' ORDER BY ORDINAL_POSITION;
SELECT name FROM sys.databases WHERE name IN ('master', 'tempdb') ORDER BY name;
GO
