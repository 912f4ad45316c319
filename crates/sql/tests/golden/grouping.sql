-- GROUP BY, HAVING and aggregates.
CREATE TABLE sales (id int PRIMARY KEY, region varchar(10), product varchar(10), qty int, price decimal(10,2));
INSERT INTO sales VALUES
 (1,'north','apple',10,1.50),(2,'north','pear',5,2.00),(3,'south','apple',7,1.50),
 (4,'south','apple',NULL,1.60),(5,'east','plum',3,NULL),(6,'north','apple',2,1.40),
 (7,NULL,'pear',4,2.10),(8,'south','pear',7,2.00);
CREATE TABLE empty_t (a int, b varchar(5));
GO
SELECT region, COUNT(*) AS n, SUM(qty) AS total FROM sales GROUP BY region ORDER BY region;
SELECT region, product, COUNT(*) AS n FROM sales GROUP BY region, product ORDER BY region, product;
SELECT COUNT(*) AS all_rows, COUNT(qty) AS qty_rows, COUNT(DISTINCT qty) AS distinct_qty, COUNT(DISTINCT region) AS regions FROM sales;
SELECT SUM(qty) AS s, AVG(qty) AS a, MIN(qty) AS mn, MAX(qty) AS mx, SUM(DISTINCT qty) AS sd, AVG(DISTINCT qty) AS ad FROM sales;
SELECT AVG(price) AS avg_price, SUM(price) AS sum_price, MIN(price) AS min_price FROM sales;
SELECT MIN(product) AS first_p, MAX(product) AS last_p, MAX(region) AS max_region FROM sales;
SELECT COUNT_BIG(*) AS big, COUNT_BIG(DISTINCT product) AS big_distinct FROM sales;
SELECT AVG(CAST(qty AS float)) AS favg FROM sales WHERE qty IS NOT NULL;
SELECT AVG(qty * 1.0) AS davg FROM sales;
GO
-- MIN/MAX of a key column read one row from the end of the index, in either direction
CREATE TABLE backwards (k int NOT NULL, v int, CONSTRAINT pk_backwards PRIMARY KEY (k DESC));
INSERT INTO backwards VALUES (5, 1), (9, 2), (-3, 3);
SELECT MAX(id) AS max_id FROM sales;
SELECT MIN(id) AS min_id FROM sales WHERE id > 3;
SELECT MAX(id) AS none_above FROM sales WHERE id > 100;
SELECT MAX(id) AS max_below FROM sales WHERE id < 5 AND id <> 4;
SELECT MIN(id) AS cheap_min FROM sales WHERE price > 1.9;
SELECT MAX(k) AS max_k FROM backwards;
SELECT MIN(k) AS min_k FROM backwards;
SELECT MAX(k) AS max_k_below FROM backwards WHERE k < 9;
SELECT MAX(a) AS empty_max FROM empty_t;
GO
-- integer AVG truncates
SELECT AVG(x) AS a FROM (VALUES (1),(2),(2)) AS v(x);
SELECT AVG(x) AS a FROM (VALUES (-1),(-2)) AS v(x);
GO
-- empty input
SELECT COUNT(*) AS n, COUNT(a) AS na, SUM(a) AS s, AVG(a) AS av, MIN(b) AS mn, MAX(b) AS mx FROM empty_t;
SELECT a, COUNT(*) AS n FROM empty_t GROUP BY a;
SELECT COUNT(*) AS n FROM sales WHERE 1 = 0;
SELECT COUNT(*) AS n FROM sales WHERE 1 = 0 HAVING COUNT(*) > 0;
SELECT COUNT(*) AS n FROM sales HAVING COUNT(*) > 0;
GO
-- HAVING
SELECT region, SUM(qty) AS total FROM sales GROUP BY region HAVING SUM(qty) > 10 ORDER BY region;
SELECT product, COUNT(*) AS n FROM sales GROUP BY product HAVING COUNT(*) >= 3 ORDER BY product;
SELECT product FROM sales GROUP BY product HAVING MAX(qty) > 6 AND MIN(qty) < 5 ORDER BY product;
SELECT region FROM sales GROUP BY region HAVING region LIKE 's%';
GO
-- expressions over groups, ORDER BY aggregate, GROUP BY expression
SELECT product, SUM(qty * price) AS revenue FROM sales GROUP BY product ORDER BY revenue DESC;
SELECT product, MAX(qty) - MIN(qty) AS spread FROM sales GROUP BY product ORDER BY COUNT(*) DESC, product;
SELECT qty % 2 AS parity, COUNT(*) AS n FROM sales WHERE qty IS NOT NULL GROUP BY qty % 2 ORDER BY parity;
SELECT LEN(product) AS l, COUNT(*) AS n FROM sales GROUP BY LEN(product) ORDER BY l;
SELECT COUNT(*) + 1 AS n1, SUM(qty) / COUNT(qty) AS manual_avg FROM sales;
SELECT region, COUNT(*) AS n FROM sales WHERE qty > 3 GROUP BY region ORDER BY n DESC, region;
GO
-- grouping collapses NULLs and case-insensitive equal strings
CREATE TABLE words (w varchar(10));
INSERT INTO words VALUES ('abc'),('ABC'),('Abc'),('abc  '),(NULL),(NULL),('xyz');
SELECT COUNT(*) AS n, COUNT(w) AS nw, COUNT(DISTINCT w) AS dw FROM words;
SELECT COUNT(*) AS n FROM words GROUP BY w ORDER BY n;
GO
-- SUM overflow
CREATE TABLE big (v int);
INSERT INTO big VALUES (2147483647),(1);
SELECT SUM(v) AS s FROM big;
GO
SELECT SUM(CAST(v AS bigint)) AS s FROM big;
SELECT 'continues' AS ok;
GO
-- errors
SELECT region, COUNT(*) FROM sales;
GO
SELECT region, product, COUNT(*) FROM sales GROUP BY region;
GO
SELECT product FROM sales GROUP BY region;
GO
SELECT region FROM sales GROUP BY region ORDER BY product;
GO
SELECT region FROM sales WHERE COUNT(*) > 1 GROUP BY region;
GO
SELECT SUM(COUNT(*)) FROM sales;
GO
SELECT SUM(product) FROM sales;
GO
SELECT AVG(region) FROM sales;
GO
SELECT region FROM sales GROUP BY region HAVING qty > 1;
GO
SELECT COUNT(*) FROM sales GROUP BY COUNT(*);
GO
SELECT 'after errors' AS ok;
GO
-- A quoted and an unquoted name, in any case, are the same column (GORM groups by "t"."c").
create table author (id int, name varchar(20));
insert author values (1, 'a'), (2, 'a'), (3, 'b');
select author.name, count(*) as n from author group by "author"."name" order by [AUTHOR].[Name];
select [Author].[NAME] as name, count(*) as n from author group by author.name order by author.NAME desc;
select name + 'x' as nx from author group by [name] + 'x' order by nx;
select upper(NAME) as u, max(id) as top_id from author group by upper([name]) having max("ID") > 1 order by upper(name);
drop table author;
go
-- ORDER BY over a UNION may repeat the first query's expression (SQLAlchemy's reflection does).
create table names_a (id int, name varchar(10));
insert names_a values (1, 'b'), (2, 'a');
select x.name, x.id from names_a x where x.id = 1 union select y.name, y.id from names_a y order by x.name desc, x.id;
drop table names_a;
go
