-- CROSS APPLY and OUTER APPLY: a correlated derived table per row of the left side.
CREATE TABLE customers (id int PRIMARY KEY, name varchar(10));
CREATE TABLE orders (id int PRIMARY KEY, customer int, total int, placed date);
INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
INSERT INTO orders VALUES (10, 1, 50, '2026-01-05'), (11, 1, 70, '2026-02-01'), (12, 2, 20, '2026-01-20'),
    (13, 1, 10, '2026-03-01');
GO
-- The latest two orders of each customer.
SELECT c.name, o.id, o.total
FROM customers c
CROSS APPLY (SELECT TOP 2 id, total FROM orders WHERE customer = c.id ORDER BY placed DESC) AS o
ORDER BY c.name, o.id;
GO
-- OUTER APPLY keeps customers without orders; an aggregate per customer.
SELECT c.name, s.n, s.total
FROM customers c
OUTER APPLY (SELECT COUNT(*) AS n, SUM(total) AS total FROM orders WHERE customer = c.id HAVING COUNT(*) > 0) AS s
ORDER BY c.id;
GO
-- Values computed once per row and used by the select list and WHERE.
SELECT c.name, x.upper_name, x.len
FROM customers c
CROSS APPLY (SELECT UPPER(c.name) AS upper_name, LEN(c.name) AS len) AS x
WHERE x.len = 3 AND c.id < 3
ORDER BY c.id;
GO
-- Chained, and with a window in the applied query.
SELECT c.name, o.id, o.rn, d.doubled
FROM customers c
CROSS APPLY (SELECT id, total, ROW_NUMBER() OVER (ORDER BY total DESC) AS rn FROM orders WHERE customer = c.id) AS o
CROSS APPLY (SELECT o.total * 2 AS doubled) AS d
WHERE o.rn = 1
ORDER BY c.name;
GO
-- A table-valued function over the left side's columns, its parameter used in a
-- subquery of its body too.
CREATE FUNCTION orders_of (@c int) RETURNS TABLE AS RETURN
    SELECT id, total, (SELECT COUNT(*) FROM orders o2 WHERE o2.customer = @c) AS of_customer
    FROM orders WHERE customer = @c;
GO
SELECT c.name, o.id, o.of_customer FROM customers c CROSS APPLY dbo.orders_of(c.id) AS o ORDER BY o.id;
SELECT c.name, o.id FROM customers c OUTER APPLY dbo.orders_of(c.id) AS o WHERE c.id > 1 ORDER BY c.id;
GO
SELECT c.name, o.id FROM customers c CROSS APPLY dbo.orders_of(1) AS o WHERE c.id = 2;
GO
