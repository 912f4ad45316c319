-- Window functions: ranking, offsets, first/last values, distribution, aggregates over
-- partitions and frames, several windows in one query, over grouped queries.
CREATE TABLE sales (id int PRIMARY KEY, region varchar(10), rep varchar(10), amount int);
INSERT INTO sales VALUES
    (1, 'east', 'ann', 100), (2, 'east', 'bob', 200), (3, 'east', 'ann', 200),
    (4, 'west', 'cy', 50), (5, 'west', 'dee', 300), (6, 'west', 'cy', NULL), (7, 'north', 'eve', 10);
GO
SELECT id, region, amount,
       ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC, id) AS rn,
       RANK() OVER (PARTITION BY region ORDER BY amount DESC) AS rnk,
       DENSE_RANK() OVER (ORDER BY amount DESC) AS dense,
       NTILE(3) OVER (ORDER BY id) AS tile
FROM sales ORDER BY id;
GO
SELECT id, amount,
       LAG(amount) OVER (ORDER BY id) AS prev,
       LEAD(amount, 2, -1) OVER (ORDER BY id) AS next2,
       FIRST_VALUE(amount) OVER (PARTITION BY region ORDER BY id) AS first_in_region,
       LAST_VALUE(amount) OVER (PARTITION BY region ORDER BY id) AS last_so_far,
       LAST_VALUE(amount) OVER (PARTITION BY region ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS last_in_region
FROM sales ORDER BY id;
GO
SELECT id, region, amount,
       SUM(amount) OVER (PARTITION BY region) AS region_total,
       SUM(amount) OVER (PARTITION BY region ORDER BY id) AS running,
       SUM(amount) OVER (ORDER BY amount) AS by_amount_range,
       SUM(amount) OVER (ORDER BY amount ROWS UNBOUNDED PRECEDING) AS by_amount_rows,
       AVG(amount) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS moving_avg,
       COUNT(*) OVER () AS total_rows,
       COUNT(amount) OVER (PARTITION BY region) AS counted,
       MIN(amount) OVER (PARTITION BY region) AS low,
       MAX(amount) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING) AS max_of_two_before
FROM sales ORDER BY id;
GO
SELECT id, amount,
       PERCENT_RANK() OVER (ORDER BY amount) AS pct,
       CUME_DIST() OVER (ORDER BY amount) AS cume
FROM sales WHERE amount IS NOT NULL ORDER BY amount, id;
GO
-- Over a grouped query, and ordered by a window.
SELECT region, SUM(amount) AS total,
       RANK() OVER (ORDER BY SUM(amount) DESC) AS place,
       SUM(SUM(amount)) OVER () AS grand_total,
       100.0 * SUM(amount) / SUM(SUM(amount)) OVER () AS share
FROM sales GROUP BY region ORDER BY place;
GO
SELECT TOP 3 rep, amount FROM sales ORDER BY ROW_NUMBER() OVER (ORDER BY amount DESC, id);
GO
-- The first row of each group, and paging, as applications write them.
SELECT id, region, amount FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC, id) AS rn FROM sales
) AS ranked WHERE rn = 1 ORDER BY region;
SELECT COUNT(*) OVER () AS total, id FROM sales ORDER BY id OFFSET 2 ROWS FETCH NEXT 2 ROWS ONLY;
GO
-- Errors.
SELECT id FROM sales WHERE ROW_NUMBER() OVER (ORDER BY id) = 1;
GO
SELECT ROW_NUMBER() OVER (PARTITION BY region) FROM sales;
GO
SELECT RANK() FROM sales;
GO
SELECT RANK() OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) FROM sales;
GO
SELECT SUM(amount) OVER (ROWS UNBOUNDED PRECEDING) FROM sales;
GO
SELECT SUM(amount) OVER (ORDER BY id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM sales;
GO
SELECT SUM(amount) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 1 PRECEDING) FROM sales;
GO
SELECT COUNT(DISTINCT region) OVER () FROM sales;
GO
SELECT SUM(ROW_NUMBER() OVER (ORDER BY id)) OVER () FROM sales;
GO
SELECT LEN(region) OVER (ORDER BY id) FROM sales;
GO
SELECT ROW_NUMBER() OVER (ORDER BY 1) FROM sales;
GO
SELECT NTILE(0) OVER (ORDER BY id) FROM sales;
GO
SELECT LAG(amount, -1) OVER (ORDER BY id) FROM sales;
GO
SELECT region FROM sales GROUP BY region HAVING COUNT(*) OVER () > 1;
GO
SET SHOWPLAN_TEXT ON;
GO
SELECT id, ROW_NUMBER() OVER (PARTITION BY region ORDER BY id) AS rn, SUM(amount) OVER (PARTITION BY region ORDER BY id) AS s FROM sales;
GO
SET SHOWPLAN_TEXT OFF;
GO
-- Input in (partition, order) order already (a clustered index read in key order,
-- forwards or backwards) is read a partition at a time; the values are those of the
-- same rows in a heap, which are sorted first.
CREATE TABLE keyed (g int NOT NULL, s int NOT NULL, v int NOT NULL, PRIMARY KEY (g, s));
CREATE TABLE unkeyed (g int NOT NULL, s int NOT NULL, v int NOT NULL);
INSERT INTO keyed SELECT value % 7, value, value * 3 % 11 FROM GENERATE_SERIES(1, 500);
INSERT INTO unkeyed SELECT g, s, v FROM keyed;
SELECT COUNT(*) AS differing FROM (
    SELECT g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s) AS rn,
           SUM(v) OVER (PARTITION BY g ORDER BY s ROWS UNBOUNDED PRECEDING) AS running,
           LAG(v) OVER (PARTITION BY g ORDER BY s) AS previous,
           COUNT(*) OVER (PARTITION BY g) AS in_group
    FROM keyed
    EXCEPT
    SELECT g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s),
           SUM(v) OVER (PARTITION BY g ORDER BY s ROWS UNBOUNDED PRECEDING),
           LAG(v) OVER (PARTITION BY g ORDER BY s),
           COUNT(*) OVER (PARTITION BY g)
    FROM unkeyed) d;
SELECT TOP 3 g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s DESC) AS rn_desc,
       FIRST_VALUE(s) OVER (PARTITION BY g ORDER BY s DESC) AS last_s
FROM keyed WHERE g = 3 ORDER BY s DESC;
SELECT g, MAX(rn) AS rows_in_group FROM (
    SELECT g, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s) AS rn FROM keyed WHERE g IN (1, 2)) x
GROUP BY g ORDER BY g;
GO
-- The plans: no Sort under the clustered index read in order, a Sort over the heap.
SET SHOWPLAN_TEXT ON;
GO
SELECT g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s) AS rn FROM keyed;
GO
SELECT g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY s) AS rn FROM unkeyed;
GO
SET SHOWPLAN_TEXT OFF;
GO
