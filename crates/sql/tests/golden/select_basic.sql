-- Basic SELECT: projections, aliases, expressions, DISTINCT, WHERE.
SET NOCOUNT OFF;
CREATE TABLE emp (id int PRIMARY KEY, name varchar(20) NOT NULL, dept varchar(10), salary int, bonus decimal(8,2));
INSERT INTO emp VALUES
 (1, 'Alice', 'eng', 100, 10.50),
 (2, 'Bob', 'eng', 80, NULL),
 (3, 'Carol', 'sales', 90, 5.25),
 (4, 'Dave', 'sales', 70, 0),
 (5, 'Eve', NULL, 120, 20),
 (6, 'Frank', 'ops', NULL, NULL);
GO
SELECT * FROM emp;
SELECT id, name FROM emp WHERE id = 3;
SELECT name AS n, salary * 2 AS double_salary, salary + 1 FROM emp WHERE id < 3;
SELECT n = name, 'const' AS c, 42 FROM emp WHERE id = 1;
SELECT e.name FROM emp AS e WHERE e.id = 2;
SELECT emp.name FROM emp WHERE emp.id = 4;
SELECT dbo.emp.name FROM dbo.emp WHERE id = 5;
SELECT DISTINCT dept FROM emp ORDER BY dept;
SELECT COUNT(*) AS n FROM (SELECT DISTINCT dept FROM emp) AS d;
SELECT DISTINCT dept, salary / 100 AS band FROM emp ORDER BY dept, band;
SELECT name FROM emp WHERE salary > 85 AND dept = 'eng';
SELECT name FROM emp WHERE salary > 85 OR dept = 'ops' ORDER BY name;
SELECT name FROM emp WHERE NOT (salary > 85) ORDER BY name;
SELECT name FROM emp WHERE id IN (1, 3, 5) ORDER BY id;
SELECT name FROM emp WHERE id NOT IN (1, 3, 5) ORDER BY id;
SELECT name FROM emp WHERE 1 = 0;
SELECT name, salary FROM emp WHERE salary <> 100 ORDER BY id;
SELECT name, salary FROM emp WHERE salary != 100 AND salary >= 80 ORDER BY id;
SELECT 1 + 2 AS three, 'a' + 'b' AS ab, 7 / 2 AS intdiv, 7 % 3 AS modulo, 7.0 / 2 AS decdiv;
SELECT id, bonus, bonus * 2 AS b2 FROM emp ORDER BY id;
SELECT -salary AS neg FROM emp WHERE id = 1;
SELECT [name], [dept] FROM [emp] WHERE [id] = 1;
SELECT COUNT(*) FROM emp;
GO
-- String concatenation
SELECT name + ' (' + dept + ')' AS label FROM emp ORDER BY id;
SELECT name + ' ' + CAST(id AS varchar(10)) AS label FROM emp WHERE id <= 2 ORDER BY id;
SELECT 'x' + NULL AS n;
GO
