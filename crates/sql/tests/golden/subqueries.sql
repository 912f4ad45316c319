-- Subqueries: scalar, correlated, IN/NOT IN, EXISTS, derived tables, ANY/ALL.
CREATE TABLE cust (id int PRIMARY KEY, name varchar(10), city varchar(10));
CREATE TABLE ord (id int PRIMARY KEY, cust_id int, amount int);
INSERT INTO cust VALUES (1,'acme','paris'),(2,'bolt','rome'),(3,'core','paris'),(4,'dyna',NULL);
INSERT INTO ord VALUES (100,1,50),(101,1,70),(102,2,20),(103,NULL,99),(104,3,70);
GO
SELECT name, (SELECT COUNT(*) FROM ord o WHERE o.cust_id = c.id) AS orders FROM cust c ORDER BY id;
SELECT name, (SELECT SUM(amount) FROM ord o WHERE o.cust_id = c.id) AS total FROM cust c ORDER BY id;
SELECT name FROM cust WHERE id = (SELECT cust_id FROM ord WHERE id = 102);
SELECT name FROM cust WHERE id = (SELECT cust_id FROM ord WHERE id = 999);
SELECT (SELECT MAX(amount) FROM ord) AS mx, (SELECT name FROM cust WHERE id = 4) AS nm;
SELECT id, amount FROM ord WHERE amount > (SELECT AVG(amount) FROM ord) ORDER BY id;
SELECT id, amount FROM ord o WHERE amount = (SELECT MAX(amount) FROM ord i WHERE i.cust_id = o.cust_id) ORDER BY id;
GO
-- error 512: the statement fails, the batch continues
SELECT name FROM cust WHERE id = (SELECT cust_id FROM ord WHERE amount = 70);
SELECT (SELECT id FROM ord) AS x;
SELECT 'continues' AS ok;
GO
-- IN / NOT IN, with NULLs
SELECT name FROM cust WHERE id IN (SELECT cust_id FROM ord) ORDER BY name;
SELECT name FROM cust WHERE id NOT IN (SELECT cust_id FROM ord) ORDER BY name;
SELECT name FROM cust WHERE id NOT IN (SELECT cust_id FROM ord WHERE cust_id IS NOT NULL) ORDER BY name;
SELECT name FROM cust WHERE id NOT IN (1, NULL);
SELECT name FROM cust WHERE id IN (1, NULL);
SELECT name FROM cust WHERE city IN ('paris', 'ROME') ORDER BY id;
SELECT name FROM cust WHERE city NOT IN ('paris') ORDER BY id;
SELECT id FROM ord WHERE cust_id IN (SELECT id FROM cust WHERE city = 'paris') ORDER BY id;
GO
-- EXISTS / NOT EXISTS
SELECT name FROM cust c WHERE EXISTS (SELECT * FROM ord o WHERE o.cust_id = c.id) ORDER BY name;
SELECT name FROM cust c WHERE NOT EXISTS (SELECT 1 FROM ord o WHERE o.cust_id = c.id) ORDER BY name;
SELECT name FROM cust c WHERE EXISTS (SELECT NULL) ORDER BY id;
SELECT COUNT(*) AS n FROM cust WHERE EXISTS (SELECT * FROM ord WHERE amount > 1000);
SELECT name FROM cust c WHERE EXISTS (SELECT 1 FROM ord o WHERE o.cust_id = c.id AND o.amount > 60) ORDER BY name;
GO
-- derived tables
SELECT t.cust_id, t.total FROM (SELECT cust_id, SUM(amount) AS total FROM ord GROUP BY cust_id) AS t WHERE t.total > 60 ORDER BY t.cust_id;
SELECT c.name, t.total FROM cust c JOIN (SELECT cust_id, SUM(amount) AS total FROM ord GROUP BY cust_id) t ON t.cust_id = c.id ORDER BY c.name;
SELECT MAX(n) AS most FROM (SELECT cust_id, COUNT(*) AS n FROM ord GROUP BY cust_id) AS x;
SELECT a, b FROM (SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y') AS d(a, b) ORDER BY a DESC;
SELECT v.n * 10 AS n10 FROM (VALUES (1), (2), (3)) AS v(n) ORDER BY v.n;
GO
-- ANY / SOME / ALL
SELECT id FROM ord WHERE amount > ALL (SELECT amount FROM ord WHERE cust_id = 1) ORDER BY id;
SELECT id FROM ord WHERE amount >= ALL (SELECT amount FROM ord) ORDER BY id;
SELECT id FROM ord WHERE amount > ANY (SELECT amount FROM ord WHERE cust_id = 1) ORDER BY id;
SELECT id FROM ord WHERE amount = SOME (SELECT amount FROM ord WHERE cust_id = 3) ORDER BY id;
SELECT id FROM ord WHERE amount < ALL (SELECT amount FROM ord WHERE 1 = 0) ORDER BY id;
SELECT id FROM ord WHERE amount > ANY (SELECT amount FROM ord WHERE 1 = 0) ORDER BY id;
SELECT id FROM cust WHERE id > ALL (SELECT cust_id FROM ord) ORDER BY id;
GO
-- subquery in select list of aggregate query, nested subqueries
SELECT COUNT(*) AS n, (SELECT COUNT(*) FROM cust) AS customers FROM ord;
SELECT name FROM cust WHERE id IN (SELECT cust_id FROM ord WHERE amount IN (SELECT amount FROM ord WHERE id = 104)) ORDER BY name;
SELECT c.name, (SELECT TOP 1 o.id FROM ord o WHERE o.cust_id = c.id ORDER BY o.amount DESC, o.id) AS best FROM cust c ORDER BY c.id;
GO
-- errors
SELECT name FROM cust WHERE id IN (SELECT id, name FROM cust);
GO
SELECT (SELECT id, name FROM cust WHERE id = 1) AS x;
GO
SELECT * FROM (SELECT id FROM cust);
GO
SELECT * FROM (SELECT 1) AS t;
GO
SELECT * FROM (SELECT 1 AS a, 2 AS a) AS t;
GO
SELECT name FROM cust WHERE EXISTS (SELECT * FROM nosuch);
GO
SELECT * FROM (SELECT id FROM cust ORDER BY id) AS t;
GO
SELECT 'after errors' AS ok;
GO
