-- #temp tables: private to the session, created in tempdb.
CREATE TABLE #work (id int PRIMARY KEY, v varchar(10) DEFAULT 'tmp');
INSERT INTO #work (id) VALUES (1), (2);
INSERT INTO #work VALUES (3, 'three');
SELECT id, v FROM #work ORDER BY id;
GO
SELECT CASE WHEN OBJECT_ID('tempdb..#work') IS NULL THEN 'no' ELSE 'yes' END AS in_tempdb;
GO
CREATE TABLE #work (a int);
GO
UPDATE #work SET v = 'upd' WHERE id = 1;
DELETE FROM #work WHERE id = 2;
SELECT id, v FROM #work ORDER BY id;
GO
SELECT w.id, w.v FROM #work AS w JOIN #work AS x ON x.id = w.id ORDER BY w.id;
GO
SELECT id INTO #copy FROM #work;
-- INTO in a UNION's first SELECT: every row of the union goes into the new table, and
-- none to the client.
SELECT 1 AS id INTO #unioned UNION ALL SELECT 2 UNION ALL SELECT 3;
SELECT id FROM #unioned ORDER BY id;
DROP TABLE #unioned;
SELECT id FROM #copy ORDER BY id;
GO
-- A temp table created later in the batch
CREATE TABLE #later (n int);
INSERT INTO #later VALUES (10);
SELECT n FROM #later;
DROP TABLE #later;
GO
SELECT n FROM #later;
GO
DROP TABLE #work;
DROP TABLE #copy;
GO
DROP TABLE #work;
GO
SELECT * FROM #work;
GO
-- A table variable lives for its batch, also when a transaction that wrote it is still
-- open at the batch's end (it is dropped at the end of the batch that ends that
-- transaction), and a new one of
-- the same name in a later batch is a new table.
BEGIN TRANSACTION;
DECLARE @o TABLE (a int, b int, c int);
INSERT INTO @o VALUES (1, 2, 3);
GO
SELECT * FROM @o;
GO
DECLARE @o TABLE (x int, y int);
INSERT INTO @o VALUES (5, 6);
SELECT * FROM @o;
GO
COMMIT;
GO
SELECT COUNT(*) AS left_in_tempdb FROM tempdb.sys.tables WHERE name LIKE '#@%';
GO
BEGIN TRANSACTION;
DECLARE @r TABLE (a int);
INSERT INTO @r VALUES (1);
GO
ROLLBACK;
GO
SELECT COUNT(*) AS left_in_tempdb FROM tempdb.sys.tables WHERE name LIKE '#@%';
GO
-- A table variable's name, like a scalar's, is declared once per batch (134 at compile time).
DECLARE @dup TABLE (a int);
DECLARE @dup TABLE (b int);
SELECT 'not run' AS never;
GO
-- Names in tempdb as SQL Server makes them: a local temp table's padded with underscores
-- to 116 characters and 12 hex digits (found by LIKE '#name[_][_][_]%', SQLAlchemy's
-- reflection), a global one's exactly as written, and 116 characters at most.
CREATE TABLE #loc (a int);
CREATE TABLE ##glob (a int);
SELECT CASE WHEN table_name LIKE '#loc[_][_][_]%' THEN '#loc padded' ELSE table_name END AS name, LEN(table_name) AS length
FROM tempdb.information_schema.tables WHERE table_name LIKE '#loc[_][_][_]%' OR table_name = '##glob' ORDER BY 1;
SELECT CASE WHEN OBJECT_ID('tempdb..##glob') IS NOT NULL AND OBJECT_ID('tempdb..#loc') IS NOT NULL THEN 'both found' END AS lookup;
DROP TABLE #loc;
DROP TABLE ##glob;
GO
CREATE TABLE #a_name_that_is_far_too_long_for_a_temporary_table_in_sql_server_because_the_suffix_needs_twelve_characters_of_its_own_x (a int);
GO
