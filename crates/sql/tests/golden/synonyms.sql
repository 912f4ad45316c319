-- Synonyms: CREATE SYNONYM for a table, a view, a procedure, a function and a sequence,
-- here and in another database; reads, writes and EXEC through them; DROP SYNONYM;
-- sys.synonyms and sys.objects; errors.
SET NOCOUNT ON;
CREATE DATABASE syn_other;
GO
USE syn_other;
CREATE TABLE dbo.remote_items (id int PRIMARY KEY, name varchar(10));
INSERT INTO dbo.remote_items VALUES (1, 'far');
GO
CREATE PROCEDURE dbo.remote_count AS SELECT COUNT(*) AS remote_rows FROM dbo.remote_items;
GO
USE master;
CREATE TABLE items (id int PRIMARY KEY, name varchar(10));
INSERT INTO items VALUES (1, 'one'), (2, 'two');
CREATE SEQUENCE item_ids START WITH 10;
GO
CREATE VIEW item_names AS SELECT name FROM items;
GO
CREATE FUNCTION dbo.double_it (@x int) RETURNS int AS BEGIN RETURN @x * 2; END
GO
CREATE PROCEDURE dbo.count_items AS SELECT COUNT(*) AS item_count FROM items;
GO
CREATE SYNONYM stock FOR dbo.items;
CREATE SYNONYM dbo.names_syn FOR item_names;
CREATE SYNONYM counter FOR dbo.count_items;
CREATE SYNONYM twice FOR dbo.double_it;
CREATE SYNONYM ids FOR dbo.item_ids;
CREATE SYNONYM far_items FOR syn_other.dbo.remote_items;
CREATE SYNONYM far_count FOR syn_other.dbo.remote_count;
GO
SELECT s.id, s.name FROM stock AS s ORDER BY s.id;
SELECT name FROM names_syn ORDER BY name;
INSERT INTO stock VALUES (3, 'three');
UPDATE stock SET name = 'TWO' WHERE id = 2;
DELETE FROM stock WHERE id = 1;
SELECT id, name FROM items ORDER BY id;
EXEC counter;
SELECT dbo.twice(21) AS doubled;
SELECT NEXT VALUE FOR ids AS next_id;
SELECT id, name FROM far_items;
INSERT INTO far_items VALUES (2, 'farther');
EXEC far_count;
SELECT far_items.name FROM far_items JOIN stock ON stock.id = far_items.id ORDER BY 1;
GO
SELECT CAST(name AS varchar(12)) AS name, type, CAST(type_desc AS varchar(8)) AS type_desc,
       CAST(base_object_name AS varchar(40)) AS base_object_name
FROM sys.synonyms ORDER BY name;
SELECT COUNT(*) AS synonym_objects FROM sys.objects WHERE type = 'SN';
GO
-- A synonym for a synonym is refused when used; a name that exists is 2714; a synonym
-- for something missing is 208 when used; DROP SYNONYM.
CREATE SYNONYM stock_again FOR stock;
GO
SELECT * FROM stock_again;
GO
CREATE SYNONYM stock FOR dbo.items;
GO
CREATE SYNONYM nothing_there FOR dbo.no_such_table;
GO
SELECT * FROM nothing_there;
GO
DROP SYNONYM stock_again;
DROP SYNONYM nothing_there;
DROP SYNONYM IF EXISTS never_made;
DROP SYNONYM stock;
GO
SELECT * FROM stock;
GO
DROP SYNONYM names_syn, counter, twice, ids, far_items, far_count;
DROP DATABASE syn_other;
GO
