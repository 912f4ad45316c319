-- INSERT: VALUES, multi-row VALUES, INSERT … SELECT, DEFAULT VALUES, column lists.
CREATE TABLE people (id int NOT NULL PRIMARY KEY, name varchar(10) NOT NULL, age tinyint NULL, city varchar(10) DEFAULT 'Oslo');
GO
INSERT INTO people VALUES (1, 'Ann', 30, 'Rome');
SELECT @@ROWCOUNT AS rc;
INSERT people (id, name) VALUES (2, 'Bob');
INSERT INTO people (name, id, age) VALUES ('Cy', 3, 41), ('Di', 4, NULL), ('Ed', 5, 7);
SELECT @@ROWCOUNT AS rc;
SELECT * FROM people ORDER BY id;
GO
-- Wrong number of values
INSERT INTO people VALUES (6, 'Fay');
GO
INSERT INTO people VALUES (6, 'Fay', 1, 'x', 'extra');
GO
INSERT INTO people (id, name) VALUES (6);
GO
INSERT INTO people (id) VALUES (6, 'Fay');
GO
INSERT INTO people (id, nope) VALUES (6, 'x');
GO
INSERT INTO people (id, name, id) VALUES (6, 'x', 7);
GO
INSERT INTO nowhere VALUES (1);
GO
SELECT COUNT(*) AS n FROM people;
GO
-- Type conversion and truncation
INSERT INTO people (id, name) VALUES ('7', 'Gus');
INSERT INTO people (id, name) VALUES (8, 'Helena Bonham');
SELECT id, name, age FROM people WHERE id >= 7 ORDER BY id;
GO
INSERT INTO people (id, name) VALUES ('x9', 'Jo');
SELECT 'not reached' AS r;
GO
SELECT COUNT(*) AS n FROM people;
GO
-- Trailing spaces do not count as truncation
INSERT INTO people (id, name) VALUES (10, 'Kim       ');
SELECT id, name + '|' AS name FROM people WHERE id = 10;
GO
-- INSERT … SELECT
CREATE TABLE archive (id int, name varchar(20), note varchar(10) DEFAULT 'copied');
INSERT INTO archive (id, name) SELECT id, name FROM people WHERE age IS NOT NULL;
SELECT @@ROWCOUNT AS rc;
SELECT id, name, note FROM archive ORDER BY id;
GO
INSERT INTO archive SELECT id, name FROM people;
GO
INSERT INTO archive (id, name) SELECT id FROM people;
GO
INSERT INTO archive (id) SELECT id, name FROM people;
GO
INSERT INTO archive SELECT id, name, 'all' FROM people WHERE id < 3;
INSERT INTO archive (id, name, note) SELECT TOP (1) id, name, 'top' FROM people ORDER BY id DESC;
SELECT id, name, note FROM archive WHERE note <> 'copied' ORDER BY id;
GO
-- DEFAULT VALUES
CREATE TABLE defs (a int DEFAULT 5, b varchar(5) DEFAULT 'd', c int);
INSERT INTO defs DEFAULT VALUES;
INSERT INTO defs VALUES (DEFAULT, DEFAULT, DEFAULT);
INSERT INTO defs (c) VALUES (1);
SELECT a, b, c FROM defs;
GO
INSERT INTO people DEFAULT VALUES;
GO
-- Expressions and variables as values
DECLARE @n int = 20;
INSERT INTO people (id, name, age) VALUES (@n, 'V' + 'ar', @n * 2), (@n + 1, 'lo' + 'w', NULL);
SELECT id, name, age FROM people WHERE id >= 20 ORDER BY id;
GO
-- An empty INSERT … SELECT
INSERT INTO archive (id) SELECT id FROM people WHERE 1 = 0;
SELECT @@ROWCOUNT AS rc;
GO
-- INSERT with TOP
CREATE TABLE few (id int);
INSERT TOP (2) INTO few SELECT id FROM people;
SELECT COUNT(*) AS n FROM few;
GO
-- Violations in multi-row inserts leave nothing behind
INSERT INTO people (id, name) VALUES (30, 'ok'), (31, NULL);
INSERT INTO people (id, name) VALUES (32, 'ok'), (1, 'dup');
SELECT COUNT(*) AS n FROM people WHERE id >= 30;
GO
-- @@ERROR after a failed statement, and after a good one
INSERT INTO people (id, name) VALUES (1, 'dup');
SELECT @@ERROR AS err;
SELECT @@ERROR AS err;
GO
