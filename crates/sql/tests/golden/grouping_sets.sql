-- ROLLUP, CUBE and GROUPING SETS, with GROUPING() and GROUPING_ID().
CREATE TABLE sales (region varchar(5), product varchar(5), qty int);
INSERT INTO sales VALUES ('east', 'a', 1), ('east', 'b', 2), ('west', 'a', 3), ('west', 'a', 4);
GO
SELECT region, product, SUM(qty) AS total, GROUPING(region) AS g_region, GROUPING(product) AS g_product,
       GROUPING_ID(region, product) AS gid
FROM sales GROUP BY ROLLUP(region, product) ORDER BY GROUPING(region), region, GROUPING(product), product;
GO
SELECT region, product, COUNT(*) AS n FROM sales GROUP BY CUBE(region, product)
ORDER BY GROUPING_ID(region, product), region, product;
GO
SELECT region, product, SUM(qty) AS total FROM sales
GROUP BY GROUPING SETS ((region, product), (product), ())
ORDER BY GROUPING(product), product, GROUPING(region), region;
GO
-- Old syntax, a plain column beside ROLLUP, HAVING on GROUPING.
SELECT region, SUM(qty) AS total FROM sales GROUP BY region WITH ROLLUP ORDER BY GROUPING(region), region;
SELECT region, product, SUM(qty) AS total FROM sales GROUP BY region, ROLLUP(product)
HAVING GROUPING(product) = 1 ORDER BY region;
SELECT CASE WHEN GROUPING(region) = 1 THEN 'all' ELSE region END AS region, SUM(qty) AS total
FROM sales GROUP BY ROLLUP(region) ORDER BY GROUPING(region), region;
GO
-- Over no rows, the grand total row is still there.
SELECT region, COUNT(*) AS n FROM sales WHERE qty > 100 GROUP BY ROLLUP(region);
-- GROUPING without grouping sets is 0.
SELECT region, GROUPING(region) AS g FROM sales GROUP BY region ORDER BY region;
GO
SELECT GROUPING(product) FROM sales GROUP BY ROLLUP(region);
GO
