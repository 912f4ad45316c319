-- Error numbers and wording; a failing statement fails alone.
CREATE TABLE t1 (id int PRIMARY KEY, name varchar(10), amount int);
CREATE TABLE t2 (id int PRIMARY KEY, t1_id int, name varchar(10));
INSERT INTO t1 VALUES (1, 'a', 10), (2, 'b', 20);
INSERT INTO t2 VALUES (1, 1, 'x'), (2, 2, 'y');
GO
-- 102
SELECT * FROM t1 WHERE;
GO
SELECT id name, FROM t1;
GO
-- 156
SELECT * FROM WHERE id = 1;
GO
SELECT id FROM t1 ORDER id;
GO
-- 208
SELECT * FROM nosuch;
GO
SELECT * FROM dbo.nosuch;
GO
-- 207
SELECT nosuch FROM t1;
GO
SELECT id FROM t1 WHERE nosuch = 1;
GO
-- 209
SELECT id FROM t1 JOIN t2 ON t1.id = t2.t1_id;
GO
SELECT name FROM t1, t2;
GO
-- 4104
SELECT t3.id FROM t1;
GO
SELECT t1.id FROM t1 a;
GO
SELECT x.y.id FROM t1;
GO
-- 107
SELECT zz.* FROM t1;
GO
-- 116
SELECT id FROM t1 WHERE id IN (SELECT id, name FROM t2);
GO
SELECT id FROM t1 WHERE EXISTS (SELECT id, name FROM t2);
GO
-- 8115
SELECT CAST(3000000000 AS int);
GO
SELECT amount * 2147483647 FROM t1;
GO
-- 8134
SELECT amount / 0 FROM t1;
GO
SELECT amount % 0 FROM t1;
GO
-- 245
SELECT id FROM t1 WHERE name = 1;
GO
SELECT 'abc' + 1;
GO
SELECT 'continues' AS ok;
GO
-- 8120, 147
SELECT id, COUNT(*) FROM t1;
GO
SELECT id FROM t1 WHERE SUM(amount) > 0;
GO
-- 104, 145
SELECT id FROM t1 UNION SELECT id FROM t2 ORDER BY name;
GO
SELECT DISTINCT name FROM t1 ORDER BY amount;
GO
-- 1062, 10741
SELECT TOP 1 WITH TIES id FROM t1;
GO
SELECT TOP 1 id FROM t1 ORDER BY id OFFSET 0 ROWS;
GO
-- runtime errors end only the statement; compile errors end the batch
SELECT 1 AS first;
SELECT amount / 0 FROM t1;
SELECT 2 AS second;
GO
SELECT 1 AS never;
SELECT * FROM t1 WHERE;
GO
SELECT 'end' AS ok;
GO
