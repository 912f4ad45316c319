-- SET SHOWPLAN_TEXT ON: each statement's text, then its plan as SQL Server prints it
-- (one operator a row, indented under "  |--"); nothing but SET and USE runs. The plans
-- show the binder's and optimizer's choices: clustered seeks, nonclustered seeks with
-- lookups, scans with residual filters, index nested loops versus hash joins, sorts, TOP,
-- aggregates, and the data changes over the reads that find their rows.
CREATE DATABASE sp;
GO
USE sp;
CREATE TABLE c (id int NOT NULL CONSTRAINT pk_c PRIMARY KEY, name varchar(20), city varchar(20));
CREATE TABLE o (id int NOT NULL CONSTRAINT pk_o PRIMARY KEY, cid int, qty int, note varchar(20));
CREATE INDEX ix_cid ON o (cid);
CREATE TABLE h (k int, v int);
CREATE TABLE s (w int NOT NULL, i int NOT NULL, q int, CONSTRAINT pk_s PRIMARY KEY (w, i));
INSERT INTO c VALUES (1, 'ann', 'oslo'), (2, 'bob', 'rome');
INSERT INTO o VALUES (10, 1, 5, NULL), (11, 2, 7, 'x');
GO
SET SHOWPLAN_TEXT ON;
GO
-- clustered key equality: a seek (the whole key of a unique index)
SELECT name FROM c WHERE id = 2;
-- a range on the clustered key, with a residual filter on another column
SELECT id FROM c WHERE id > 1 AND city = 'rome';
-- no usable index: a scan with the filter folded in as WHERE
SELECT id FROM c WHERE name LIKE 'a%';
-- a heap is a Table Scan
SELECT v FROM h WHERE k = 3;
-- a nonclustered index seek, then each row through its clustered key
SELECT qty FROM o WHERE cid = 1;
-- the join's inner table has an index on the join column: index nested loops
SELECT c.name, o.qty FROM c JOIN o ON o.cid = c.id;
-- the inner table's key leads with a column the query pins to a value and goes on with
-- the join column: index nested loops seeking both (TPC-C's stock level query)
SELECT COUNT(DISTINCT s.i) FROM o, s WHERE o.id >= 10 AND s.w = 1 AND s.i = o.cid AND s.q < 15;
-- no index on the join column: a hash join (the build input first)
SELECT c.name, h.v FROM c JOIN h ON h.k = c.id;
SELECT c.name, h.v FROM c LEFT JOIN h ON h.k = c.id;
-- join hints: a hash join where index nested loops would be chosen, nested loops where a
-- hash join would be; OPTION's hint applies to every join of the statement
SELECT c.name, o.qty FROM c INNER HASH JOIN o ON o.cid = c.id;
SELECT c.name, h.v FROM c INNER LOOP JOIN h ON h.k = c.id;
SELECT c.name, h.v FROM c JOIN h ON h.k = c.id OPTION (LOOP JOIN);
SELECT c.name, o.qty FROM c, o WHERE o.cid = c.id OPTION (HASH JOIN);
-- no equality to hash on: nested loops with the join predicate
SELECT a.id, b.id FROM c AS a JOIN c AS b ON a.id < b.id;
-- ORDER BY, TOP, OFFSET
SELECT TOP (5) id, name FROM c ORDER BY name DESC, id;
SELECT id FROM c ORDER BY id OFFSET 1 ROWS FETCH NEXT 1 ROWS ONLY;
-- ORDER BY the key descending: the index read backward, no sort
SELECT TOP (2) id, name FROM c ORDER BY id DESC;
-- a nonclustered index's entries end with the clustered key: ordered by both
SELECT id FROM o WHERE cid = 3 ORDER BY cid, id;
-- MIN/MAX of a NOT NULL key column read one row from the right end; of a nullable one, all
SELECT MAX(id) FROM c;
SELECT MIN(id) FROM o WHERE id > 10;
SELECT MAX(cid) FROM o;
-- aggregates: grouped (hash), scalar (stream), computed values
SELECT cid, COUNT(*) AS n, SUM(qty) AS total FROM o GROUP BY cid;
SELECT MAX(qty) AS top_qty FROM o;
SELECT id, qty * 2 + 1 AS q2 FROM o WHERE note IS NOT NULL;
SELECT DISTINCT city FROM c;
-- subqueries are children of the operator that evaluates them
SELECT name FROM c WHERE EXISTS (SELECT * FROM o WHERE o.cid = c.id AND o.qty > 6);
SELECT id, (SELECT COUNT(*) FROM o) AS n FROM c;
SELECT id FROM c UNION ALL SELECT k FROM h;
SELECT 1 AS one;
-- data changes
UPDATE o SET qty = qty + 1 WHERE id = 10;
UPDATE o SET cid = 2 WHERE cid = 1;
DELETE FROM c WHERE city = 'oslo';
INSERT INTO c VALUES (3, 'cat', 'bonn');
INSERT INTO h (k, v) SELECT id, qty FROM o WHERE qty > 5;
DECLARE @n int = 2;
SELECT name FROM c WHERE id = @n;
GO
SET SHOWPLAN_TEXT OFF;
GO
-- nothing above ran: the rows are as they were
SELECT (SELECT COUNT(*) FROM c) AS c_rows, (SELECT SUM(qty) FROM o) AS qty, (SELECT COUNT(*) FROM h) AS h_rows;
GO
-- SET SHOWPLAN must be alone in its batch (1067): nothing of the batch runs
SET SHOWPLAN_TEXT ON;
SELECT 1 AS ran;
GO
SELECT 2 AS runs_normally;
GO
