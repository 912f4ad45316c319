-- IDENTITY columns, IDENTITY_INSERT, @@IDENTITY, SCOPE_IDENTITY(), IDENT_CURRENT.
CREATE TABLE ids (id int IDENTITY(1,1) PRIMARY KEY, v varchar(10));
CREATE TABLE steps (id bigint IDENTITY(100, 10), v int);
GO
SELECT @@IDENTITY AS at_identity, SCOPE_IDENTITY() AS scope_id, IDENT_CURRENT('ids') AS current_ids;
GO
INSERT INTO ids (v) VALUES ('a');
SELECT @@IDENTITY AS at_identity, SCOPE_IDENTITY() AS scope_id, IDENT_CURRENT('ids') AS current_ids;
INSERT INTO ids (v) VALUES ('b'), ('c');
SELECT @@IDENTITY AS at_identity, SCOPE_IDENTITY() AS scope_id;
INSERT INTO ids VALUES ('d');
SELECT id, v FROM ids ORDER BY id;
GO
INSERT INTO ids VALUES (9, 'e');
GO
INSERT INTO steps (v) VALUES (1), (2), (3);
SELECT id, v FROM steps ORDER BY id;
SELECT IDENT_CURRENT('steps') AS current_steps, @@IDENTITY AS at_identity;
GO
-- Explicit values need IDENTITY_INSERT
INSERT INTO ids (id, v) VALUES (50, 'x');
GO
SET IDENTITY_INSERT ids ON;
INSERT INTO ids (id, v) VALUES (50, 'x');
SELECT IDENT_CURRENT('ids') AS current_ids;
INSERT INTO ids (id, v) VALUES (20, 'y');
SELECT @@IDENTITY AS at_identity;
GO
INSERT INTO ids VALUES (60, 'z');
GO
INSERT INTO ids (v) VALUES ('no id');
GO
SET IDENTITY_INSERT ids OFF;
INSERT INTO ids (v) VALUES ('after');
SELECT id, v FROM ids ORDER BY id;
GO
-- A rolled back insert still consumes its identity value
BEGIN TRANSACTION;
INSERT INTO ids (v) VALUES ('undone');
ROLLBACK TRANSACTION;
INSERT INTO ids (v) VALUES ('next');
SELECT TOP (2) id, v FROM ids ORDER BY id DESC;
GO
-- Identity columns cannot be updated
UPDATE ids SET id = 5 WHERE id = 1;
GO
-- Seed and increment, negative increment
CREATE TABLE down (id smallint IDENTITY(10, -5), v int);
INSERT INTO down (v) VALUES (1), (2), (3);
SELECT id, v FROM down ORDER BY v;
GO
-- Overflow
CREATE TABLE tiny_ids (id tinyint IDENTITY(254, 1), v int);
INSERT INTO tiny_ids (v) VALUES (1);
INSERT INTO tiny_ids (v) VALUES (2);
INSERT INTO tiny_ids (v) VALUES (3);
SELECT id, v FROM tiny_ids;
GO
-- DELETE keeps the counter; TRUNCATE resets it
DELETE FROM steps;
INSERT INTO steps (v) VALUES (4);
SELECT id, v FROM steps;
TRUNCATE TABLE steps;
INSERT INTO steps (v) VALUES (5);
SELECT id, v FROM steps;
GO
-- sys.identity_columns / COLUMNPROPERTY style metadata
SELECT name, is_identity FROM sys.columns WHERE object_id = OBJECT_ID('ids') ORDER BY column_id;
GO
SET IDENTITY_INSERT no_such_table ON;
GO
