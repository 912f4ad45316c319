-- Joins: inner, outer, cross, self, multi-table, composite keys.
CREATE TABLE dept (id int PRIMARY KEY, name varchar(10));
CREATE TABLE staff (id int PRIMARY KEY, name varchar(10), dept_id int, boss_id int);
CREATE TABLE proj (dept_id int, code char(3), title varchar(12), PRIMARY KEY (dept_id, code));
CREATE TABLE assign (staff_id int, dept_id int, code char(3), hours int);
INSERT INTO dept VALUES (1,'eng'),(2,'sales'),(3,'ops'),(4,'empty');
INSERT INTO staff VALUES (10,'ann',1,NULL),(11,'bob',1,10),(12,'cat',2,10),(13,'dan',2,12),(14,'eve',NULL,10),(15,'fox',9,13);
INSERT INTO proj VALUES (1,'A01','compiler'),(1,'B02','database'),(2,'A01','crm'),(3,'C03','network');
INSERT INTO assign VALUES (10,1,'A01',5),(11,1,'B02',3),(11,1,'A01',2),(12,2,'A01',8),(13,2,'B02',1),(14,NULL,'A01',4);
GO
SELECT s.name, d.name AS dept FROM staff s INNER JOIN dept d ON s.dept_id = d.id ORDER BY s.id;
SELECT s.name, d.name AS dept FROM staff s JOIN dept d ON d.id = s.dept_id WHERE d.name = 'eng' ORDER BY s.name;
SELECT s.name, d.name AS dept FROM staff s LEFT JOIN dept d ON s.dept_id = d.id ORDER BY s.id;
SELECT s.name, d.name AS dept FROM staff s LEFT OUTER JOIN dept d ON s.dept_id = d.id WHERE d.id IS NULL ORDER BY s.id;
SELECT d.name AS dept, s.name FROM staff s RIGHT JOIN dept d ON s.dept_id = d.id ORDER BY d.id, s.id;
SELECT d.name AS dept, s.name FROM staff s FULL OUTER JOIN dept d ON s.dept_id = d.id ORDER BY d.id, s.id;
SELECT d.name AS dept, s.name FROM staff s FULL JOIN dept d ON s.dept_id = d.id WHERE s.id IS NULL OR d.id IS NULL ORDER BY d.id, s.id;
SELECT COUNT(*) AS n FROM staff CROSS JOIN dept;
SELECT d.name, p.code FROM dept d CROSS JOIN (SELECT DISTINCT code FROM proj) p WHERE d.id <= 2 ORDER BY d.name, p.code;
SELECT d.name, s.name FROM dept d, staff s WHERE d.id = s.dept_id AND s.name > 'b' ORDER BY s.name;
GO
-- extra conditions in ON versus WHERE for outer joins
SELECT d.name, s.name AS staff FROM dept d LEFT JOIN staff s ON s.dept_id = d.id AND s.name <> 'ann' ORDER BY d.id, s.id;
SELECT d.name, s.name AS staff FROM dept d LEFT JOIN staff s ON s.dept_id = d.id WHERE s.name <> 'ann' ORDER BY d.id, s.id;
SELECT d.name, s.name AS staff FROM dept d LEFT JOIN staff s ON s.dept_id = d.id AND d.id = 2 ORDER BY d.id, s.id;
SELECT d.name, s.name AS staff FROM dept d INNER JOIN staff s ON s.dept_id = d.id AND s.boss_id IS NOT NULL ORDER BY s.id;
SELECT d.name, s.name FROM dept d LEFT JOIN staff s ON 1 = 0 ORDER BY d.id;
GO
-- self join
SELECT e.name AS employee, b.name AS boss FROM staff e JOIN staff b ON e.boss_id = b.id ORDER BY e.id;
SELECT e.name AS employee, b.name AS boss FROM staff e LEFT JOIN staff b ON e.boss_id = b.id ORDER BY e.id;
SELECT b.name AS boss, COUNT(*) AS reports FROM staff e JOIN staff b ON e.boss_id = b.id GROUP BY b.name ORDER BY reports DESC, boss;
GO
-- composite keys and multi-table joins
SELECT s.name, p.title, a.hours FROM assign a JOIN staff s ON s.id = a.staff_id JOIN proj p ON p.dept_id = a.dept_id AND p.code = a.code ORDER BY s.name, p.title;
SELECT s.name, a.code, p.title FROM assign a JOIN staff s ON s.id = a.staff_id LEFT JOIN proj p ON p.dept_id = a.dept_id AND p.code = a.code ORDER BY s.id, a.code;
SELECT d.name, p.title, COALESCE(SUM(a.hours), 0) AS hours FROM dept d JOIN proj p ON p.dept_id = d.id LEFT JOIN assign a ON a.dept_id = p.dept_id AND a.code = p.code GROUP BY d.name, p.title ORDER BY d.name, p.title;
SELECT d.name, s.name, p.title FROM dept d JOIN staff s ON s.dept_id = d.id JOIN proj p ON p.dept_id = d.id WHERE p.code = 'A01' ORDER BY d.name, s.name;
SELECT x.name, y.name FROM (dept x JOIN staff y ON y.dept_id = x.id) WHERE x.id = 1 ORDER BY y.name;
SELECT d.name, s.name FROM dept d LEFT JOIN (staff s JOIN assign a ON a.staff_id = s.id) ON s.dept_id = d.id AND a.hours > 4 ORDER BY d.id, s.name;
GO
-- join on non-key columns, inequality joins, join with NULL keys
SELECT a.staff_id, b.staff_id FROM assign a JOIN assign b ON a.code = b.code AND a.staff_id < b.staff_id ORDER BY a.staff_id, b.staff_id;
SELECT a.staff_id, d.name FROM assign a LEFT JOIN dept d ON a.dept_id = d.id ORDER BY a.staff_id, a.code;
SELECT s.name, d.name FROM staff s JOIN dept d ON s.dept_id > d.id WHERE s.id < 13 ORDER BY s.id, d.id;
SELECT COUNT(*) AS null_keys_never_match FROM staff s1 JOIN staff s2 ON s1.boss_id = s2.boss_id WHERE s1.boss_id IS NULL;
GO
-- USING-style mistakes and ambiguity
SELECT name FROM staff s JOIN dept d ON s.dept_id = d.id;
GO
SELECT id FROM staff JOIN dept ON dept_id = dept.id;
GO
SELECT s.name FROM staff s JOIN dept d ON staff.dept_id = d.id;
GO
SELECT x.name FROM staff s;
GO
SELECT s.nosuch FROM staff s;
GO
SELECT * FROM staff s JOIN nosuch n ON n.id = s.id;
GO
SELECT s.name FROM staff s JOIN dept s ON s.id = 1;
GO
SELECT 'after errors' AS ok;
GO
-- the inner table's composite key pinned by a constant and the join column (index nested
-- loops seeking both), with constant filters on both sides and a residual on the inner
CREATE TABLE stock (w int NOT NULL, item int NOT NULL, qty int, PRIMARY KEY (w, item));
CREATE TABLE line (w int NOT NULL, o int NOT NULL, n int NOT NULL, item int, PRIMARY KEY (w, o, n));
INSERT INTO stock VALUES (1, 1, 5), (1, 2, 50), (1, 3, 7), (2, 1, 1), (2, 2, 2), (2, 3, 3);
INSERT INTO line VALUES (1, 10, 1, 1), (1, 10, 2, 2), (1, 11, 1, 3), (1, 12, 1, 1), (2, 10, 1, 3), (1, 13, 1, 9);
SELECT COUNT(DISTINCT stock.item) AS low FROM line, stock WHERE line.w = 1 AND o >= 10 AND o < 13 AND stock.w = 1 AND stock.item = line.item AND qty < 10;
SELECT l.o, l.n, s.w, s.qty FROM line l JOIN stock s ON s.item = l.item AND s.w = 2 WHERE l.w = 1 ORDER BY l.o, l.n;
SELECT l.o, l.n, s.qty FROM line l LEFT JOIN stock s ON s.item = l.item AND s.w = 1 AND s.qty > 6 ORDER BY l.w, l.o, l.n;
GO
-- join hints: the rows are the same whichever way the join is made
SELECT l.o, s.qty FROM line l INNER LOOP JOIN stock s ON s.item = l.item AND s.w = l.w ORDER BY l.w, l.o, l.n;
SELECT l.o, s.qty FROM line l INNER HASH JOIN stock s ON s.item = l.item AND s.w = l.w ORDER BY l.w, l.o, l.n;
SELECT l.o, s.qty FROM line l LEFT OUTER MERGE JOIN stock s ON s.item = l.item AND s.w = l.w ORDER BY l.w, l.o, l.n;
SELECT l.o, s.qty FROM line l, stock s WHERE s.item = l.item AND s.w = l.w ORDER BY l.w, l.o, l.n OPTION (HASH JOIN);
GO
-- a hash or merge join needs an equality to join on (8622)
SELECT COUNT(*) FROM line l INNER HASH JOIN stock s ON s.item < l.item;
GO
SELECT COUNT(*) FROM line l JOIN stock s ON s.item < l.item OPTION (MERGE JOIN);
GO
SELECT COUNT(*) AS loops_need_no_equality FROM line l JOIN stock s ON s.item < l.item OPTION (LOOP JOIN);
GO
