-- Recursive common table expressions: anchor UNION ALL recursive member, MAXRECURSION.
WITH n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 5)
SELECT i FROM n;
GO
-- 100 recursion levels are allowed by default; the 101st is error 530.
WITH n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 101) SELECT COUNT(*) AS levels_ok FROM n;
WITH n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 102) SELECT COUNT(*) FROM n;
PRINT 'the batch goes on after 530';
WITH n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT COUNT(*) AS unlimited FROM n OPTION (MAXRECURSION 0);
WITH n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT COUNT(*) FROM n OPTION (MAXRECURSION 5, RECOMPILE);
GO
SELECT 1 AS x OPTION (MAXRECURSION 40000);
GO
-- Anchor and recursive columns must have exactly the same types.
WITH n(s) AS (SELECT 'a' UNION ALL SELECT s + 'a' FROM n WHERE LEN(s) < 3) SELECT s FROM n;
GO
WITH n(s) AS (SELECT CAST('a' AS varchar(10)) UNION ALL SELECT CAST(s + 'a' AS varchar(10)) FROM n WHERE LEN(s) < 3)
SELECT s, LEN(s) AS len FROM n;
GO
WITH n(i) AS (SELECT 1 UNION SELECT i + 1 FROM n WHERE i < 3) SELECT i FROM n;
GO
WITH n(i) AS (SELECT 1 UNION ALL SELECT a.i + 1 FROM n a JOIN n b ON a.i = b.i WHERE a.i < 3) SELECT i FROM n;
GO
-- An org chart: levels and paths down from the root.
CREATE TABLE emp (id int PRIMARY KEY, boss int NULL REFERENCES emp(id), name varchar(20) NOT NULL);
INSERT emp VALUES (1, NULL, 'ceo'), (2, 1, 'vp'), (3, 2, 'mgr'), (4, 3, 'dev'), (5, 1, 'cfo'), (6, 5, 'clerk');
WITH chain AS (
    SELECT id, name, 0 AS lvl, CAST(name AS varchar(200)) AS path FROM emp WHERE boss IS NULL
    UNION ALL
    SELECT e.id, e.name, c.lvl + 1, CAST(c.path + '/' + e.name AS varchar(200))
    FROM emp AS e INNER JOIN chain AS c ON e.boss = c.id
)
SELECT id, lvl, path FROM chain ORDER BY path;
-- Everyone under the vp, as a join of the CTE with the table, and the count per level.
WITH under AS (SELECT id FROM emp WHERE name = 'vp' UNION ALL SELECT e.id FROM emp e JOIN under u ON e.boss = u.id)
SELECT e.name FROM emp e WHERE e.id IN (SELECT id FROM under) ORDER BY e.id;
WITH chain(id, lvl) AS (SELECT id, 0 FROM emp WHERE boss IS NULL UNION ALL SELECT e.id, c.lvl + 1 FROM emp e JOIN chain c ON e.boss = c.id)
SELECT lvl, COUNT(*) AS people FROM chain GROUP BY lvl ORDER BY lvl;
GO
-- Two anchors, a recursive CTE feeding INSERT … SELECT, and one used by a later CTE.
WITH n(i, tag) AS (SELECT 1, 'a' UNION ALL SELECT 100, 'b' UNION ALL SELECT i + 1, tag FROM n WHERE i % 100 < 3)
SELECT i, tag FROM n ORDER BY i;
CREATE TABLE numbers (n int PRIMARY KEY);
WITH seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 250)
INSERT numbers SELECT n FROM seq OPTION (MAXRECURSION 300);
SELECT COUNT(*) AS c, MIN(n) AS lo, MAX(n) AS hi FROM numbers;
WITH seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 4), sq AS (SELECT n, n * n AS square FROM seq)
SELECT a.n, b.square FROM sq a JOIN sq b ON a.n = b.n ORDER BY a.n;
-- Inside a procedure, with the limit from a parameter-driven depth.
GO
CREATE PROCEDURE countdown @from int AS
WITH c(i) AS (SELECT @from UNION ALL SELECT i - 1 FROM c WHERE i > 0) SELECT i FROM c;
GO
EXEC countdown 3;
EXEC countdown 150;
GO
-- CTEs before UPDATE and DELETE.
WITH under AS (SELECT id FROM emp WHERE name = 'cfo' UNION ALL SELECT e.id FROM emp e JOIN under u ON e.boss = u.id)
UPDATE emp SET name = UPPER(name) WHERE id IN (SELECT id FROM under);
WITH odd AS (SELECT n FROM numbers WHERE n % 2 = 1)
DELETE FROM numbers WHERE n IN (SELECT n FROM odd);
SELECT name FROM emp ORDER BY id;
SELECT COUNT(*) AS evens FROM numbers;
GO
