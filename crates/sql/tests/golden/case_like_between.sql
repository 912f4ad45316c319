-- CASE, LIKE, BETWEEN, collation.
CREATE TABLE p (id int PRIMARY KEY, name varchar(20), code char(4), n int);
INSERT INTO p VALUES (1,'apple','A1',5),(2,'Banana','b2',15),(3,'cherry','C3',25),(4,'date%','d_4',NULL),(5,'Éclair','e5',35),(6,'a_b','x',0),(7,'[bracket]','y',1);
GO
SELECT id, CASE n WHEN 5 THEN 'five' WHEN 15 THEN 'fifteen' ELSE 'other' END AS simple FROM p ORDER BY id;
SELECT id, CASE WHEN n < 10 THEN 'low' WHEN n < 30 THEN 'mid' WHEN n IS NULL THEN 'none' END AS searched FROM p ORDER BY id;
SELECT id, CASE n WHEN NULL THEN 'null?' ELSE 'not matched' END AS c FROM p WHERE id = 4;
SELECT CASE WHEN 1 = 1 THEN 1 ELSE 2.5 END AS t1, CASE WHEN 1 = 0 THEN 'x' END AS t2;
SELECT SUM(CASE WHEN n > 10 THEN 1 ELSE 0 END) AS big, COUNT(CASE WHEN n <= 10 THEN 1 END) AS small FROM p;
SELECT id FROM p ORDER BY CASE WHEN n IS NULL THEN 0 ELSE 1 END, n DESC;
GO
SELECT name FROM p WHERE name LIKE 'a%' ORDER BY id;
SELECT name FROM p WHERE name LIKE 'A%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '%an%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '_a%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '[a-c]%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '[^a-c]%' ORDER BY id;
SELECT name FROM p WHERE name NOT LIKE '%e%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '%!%' ESCAPE '!' ORDER BY id;
SELECT name FROM p WHERE name LIKE 'a!_%' ESCAPE '!' ORDER BY id;
SELECT name FROM p WHERE name LIKE 'a[_]b' ORDER BY id;
SELECT name FROM p WHERE name LIKE '[[]%' ORDER BY id;
SELECT name FROM p WHERE name LIKE 'e%' ORDER BY id;
SELECT name FROM p WHERE name LIKE '%' ORDER BY id;
SELECT code FROM p WHERE code LIKE 'x' ORDER BY id;
SELECT code FROM p WHERE code LIKE 'x%' ORDER BY id;
SELECT name FROM p WHERE name LIKE NULL;
SELECT CASE WHEN 'abc' LIKE 'ABC' THEN 1 ELSE 0 END AS ci, CASE WHEN 'abc ' LIKE 'abc' THEN 1 ELSE 0 END AS trailing_pattern, CASE WHEN 'abc' LIKE 'abc ' THEN 1 ELSE 0 END AS trailing_value;
GO
SELECT id FROM p WHERE n BETWEEN 5 AND 25 ORDER BY id;
SELECT id FROM p WHERE n NOT BETWEEN 5 AND 25 ORDER BY id;
SELECT id FROM p WHERE n BETWEEN 25 AND 5;
SELECT id FROM p WHERE name BETWEEN 'b' AND 'd' ORDER BY id;
SELECT id FROM p WHERE id BETWEEN 2 AND 3 OR id BETWEEN 6 AND 100 ORDER BY id;
GO
-- collation: case-insensitive, accent-sensitive, trailing spaces ignored in comparisons
SELECT CASE WHEN 'abc' = 'ABC' THEN 'equal' ELSE 'different' END AS ci;
SELECT CASE WHEN 'abc' = 'abc   ' THEN 'equal' ELSE 'different' END AS trailing;
SELECT CASE WHEN 'abc' = '   abc' THEN 'equal' ELSE 'different' END AS leading;
SELECT CASE WHEN 'eclair' = 'Éclair' THEN 'equal' ELSE 'different' END AS accents;
SELECT name FROM p WHERE name = 'BANANA';
SELECT name FROM p WHERE name = 'eclair';
SELECT name FROM p WHERE code = 'A1  ';
SELECT name FROM p WHERE name > 'C' AND id <= 5 ORDER BY name;
SELECT name FROM p WHERE id <= 5 ORDER BY name DESC;
SELECT LEN(code) AS l, DATALENGTH(code) AS dl, code + '|' AS padded FROM p WHERE id = 1;
GO
