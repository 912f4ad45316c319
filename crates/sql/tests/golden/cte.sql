-- Common table expressions and ROW_NUMBER.
CREATE TABLE t (id int PRIMARY KEY, grp char(1), v int);
INSERT INTO t VALUES (1,'a',10),(2,'a',30),(3,'b',20),(4,'b',20),(5,'b',5),(6,'c',NULL);
GO
WITH c AS (SELECT id, v FROM t WHERE v > 10) SELECT * FROM c ORDER BY id;
WITH c (k, val) AS (SELECT id, v FROM t) SELECT k, val FROM c WHERE k <= 2 ORDER BY k;
WITH g AS (SELECT grp, SUM(v) AS total FROM t GROUP BY grp), best AS (SELECT MAX(total) AS m FROM g)
SELECT g.grp, g.total FROM g JOIN best ON g.total = best.m;
WITH x AS (SELECT id FROM t WHERE id < 4), y AS (SELECT id FROM x WHERE id > 1) SELECT y.id FROM y ORDER BY y.id;
WITH c AS (SELECT id, grp FROM t) SELECT a.id, b.id FROM c a JOIN c b ON a.grp = b.grp AND a.id < b.id ORDER BY a.id, b.id;
WITH c AS (SELECT id FROM t) SELECT COUNT(*) AS n FROM c WHERE id IN (SELECT id FROM c WHERE id % 2 = 0);
WITH c AS (SELECT 1 AS one) SELECT one FROM c UNION ALL SELECT 2;
GO
-- a CTE name hides a table of the same name
WITH t AS (SELECT 42 AS id) SELECT id FROM t;
GO
-- ROW_NUMBER
SELECT id, ROW_NUMBER() OVER (ORDER BY v DESC, id) AS rn FROM t ORDER BY id;
SELECT id, grp, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY id DESC) AS rn FROM t ORDER BY grp, rn;
WITH r AS (SELECT id, grp, v, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY v DESC, id) AS rn FROM t)
SELECT grp, id, v FROM r WHERE rn = 1 ORDER BY grp;
GO
-- errors
WITH c AS (SELECT id FROM t) SELECT nosuch FROM c;
GO
WITH c (a, b) AS (SELECT id FROM t) SELECT * FROM c;
GO
WITH c AS (SELECT 1 AS a), c AS (SELECT 2 AS a) SELECT * FROM c;
GO
WITH c AS (SELECT 1) SELECT * FROM c;
GO
SELECT id, ROW_NUMBER() OVER () AS rn FROM t;
GO
SELECT 'after errors' AS ok;
GO
