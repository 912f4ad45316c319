-- SET STATISTICS IO ON: after each statement, one message per table it read, with the
-- pages counted by the buffer pool (every fetch a logical read; nothing here is read
-- from disk, the pages were just written). A seek of one key of a unique index reads
-- the root and one leaf and is no scan ("Scan count 0"); a scan reads the root, then
-- follows the leaf chain.
CREATE DATABASE sio;
GO
USE sio;
-- 3000-byte rows: two to a leaf page
CREATE TABLE t (id int NOT NULL CONSTRAINT pk_t PRIMARY KEY, a int, pad char(3000));
CREATE INDEX ix_a ON t (a);
CREATE TABLE h (x int, y int);
SET NOCOUNT ON;
INSERT INTO t VALUES (1, 1, 'p');
INSERT INTO t VALUES (2, 2, 'p');
INSERT INTO t VALUES (3, 1, 'p');
INSERT INTO t VALUES (4, 2, 'p');
INSERT INTO h VALUES (1, 10), (3, 30);
SET NOCOUNT OFF;
GO
SET STATISTICS IO ON;
GO
-- one key of the primary key: root + leaf, scan count 0
SELECT id, a FROM t WHERE id = 3;
-- the whole table: root + the leaves
SELECT COUNT(*) AS n FROM t;
-- a range: root, the leaves in it, and the leaf past its end
SELECT id FROM t WHERE id BETWEEN 1 AND 2;
-- a one-page heap
SELECT x, y FROM h;
-- a nonclustered seek (its own root and leaf) and a lookup per row (root + leaf each)
SELECT id FROM t WHERE a = 2;
-- index nested loops: one seek of t per row of h, each a single-key seek
SELECT h.x, t.a FROM h JOIN t ON t.id = h.x;
-- data changes: the reads that find the rows, and those that store them
UPDATE t SET a = 3 WHERE id = 4;
INSERT INTO h VALUES (5, 50);
DELETE FROM h WHERE x = 5;
-- a condition's subquery is reported before what the IF runs
IF EXISTS (SELECT * FROM t WHERE id = 1) PRINT 'found';
-- no table: no message
SELECT 1 AS no_table;
GO
SET STATISTICS IO OFF;
GO
SELECT id FROM t WHERE id = 3;
GO
