-- PIVOT and UNPIVOT.
CREATE TABLE sales (year int, quarter varchar(2), amount int);
INSERT INTO sales VALUES (2025, 'Q1', 10), (2025, 'Q2', 20), (2025, 'Q2', 5), (2026, 'Q1', 7), (2026, 'Q4', 1);
GO
SELECT year, [Q1], [Q2], [Q3], [Q4]
FROM sales PIVOT (SUM(amount) FOR quarter IN ([Q1], [Q2], [Q3], [Q4])) AS p
ORDER BY year;
SELECT p.* FROM (SELECT quarter, amount FROM sales) AS s
PIVOT (COUNT(amount) FOR quarter IN ([Q1], [Q2], [Q4])) AS p;
GO
-- A pivot on an integer column, and UNPIVOT back.
SELECT quarter, [2025], [2026] FROM sales PIVOT (MAX(amount) FOR year IN ([2025], [2026])) AS p ORDER BY quarter;
GO
CREATE TABLE wide (id int, q1 int, q2 int, q3 int);
INSERT INTO wide VALUES (1, 10, NULL, 30), (2, 5, 6, 7);
SELECT id, quarter, amount FROM wide UNPIVOT (amount FOR quarter IN (q1, q2, q3)) AS u ORDER BY id, quarter;
GO
SELECT * FROM sales PIVOT (SUM(nosuch) FOR quarter IN ([Q1])) AS p;
GO
