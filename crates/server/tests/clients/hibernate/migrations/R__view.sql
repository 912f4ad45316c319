-- Flyway repeatable migration: re-applied whenever its checksum changes.
CREATE OR ALTER VIEW customer_totals AS
SELECT c.id, c.name, COUNT(o.id) AS order_count, COALESCE(SUM(o.total), 0) AS total
FROM customers AS c
LEFT JOIN orders AS o ON o.customer_id = c.id
GROUP BY c.id, c.name;
