-- UPDATE and DELETE: WHERE, FROM joins, compound assignment, TOP, @@ROWCOUNT.
CREATE TABLE stock (id int PRIMARY KEY, item varchar(10) NOT NULL, qty int NOT NULL, price money);
INSERT INTO stock VALUES (1, 'apple', 10, 0.50), (2, 'pear', 0, 0.75), (3, 'plum', 25, 1.10), (4, 'fig', 3, 2.00);
CREATE TABLE deliveries (item varchar(10), amount int);
INSERT INTO deliveries VALUES ('apple', 5), ('plum', 1), ('kiwi', 9);
GO
UPDATE stock SET qty = qty + 1 WHERE id = 1;
SELECT @@ROWCOUNT AS rc;
UPDATE stock SET qty += 100, price = price * 2 WHERE item = 'fig';
UPDATE stock SET qty -= 1 WHERE qty > 20;
UPDATE stock SET price = NULL WHERE 1 = 0;
SELECT @@ROWCOUNT AS rc;
SELECT id, item, qty, price FROM stock ORDER BY id;
GO
-- UPDATE … FROM a join
UPDATE s SET qty = s.qty + d.amount
FROM stock AS s JOIN deliveries AS d ON d.item = s.item;
SELECT @@ROWCOUNT AS rc;
SELECT id, item, qty FROM stock ORDER BY id;
GO
UPDATE stock SET qty = d.amount FROM stock INNER JOIN deliveries d ON d.item = stock.item WHERE d.amount > 3;
SELECT id, item, qty FROM stock ORDER BY id;
GO
-- Column = DEFAULT, variable assignment in SET
CREATE TABLE counters (name varchar(10) PRIMARY KEY, n int DEFAULT 42);
INSERT INTO counters VALUES ('a', 1), ('b', 2);
UPDATE counters SET n = DEFAULT WHERE name = 'a';
DECLARE @old int;
UPDATE counters SET @old = n, n = n * 10 WHERE name = 'b';
SELECT @old AS old_n;
SELECT name, n FROM counters ORDER BY name;
GO
-- Errors
UPDATE stock SET nope = 1;
GO
UPDATE stock SET qty = NULL WHERE id = 2;
SELECT id, qty FROM stock WHERE id = 2;
GO
UPDATE stock SET item = 'watermelons!' WHERE id = 2;
SELECT id, item FROM stock WHERE id = 2;
GO
UPDATE stock SET qty = 1, qty = 2;
GO
UPDATE no_table SET a = 1;
GO
UPDATE stock SET qty = qty / 0 WHERE id = 1;
SELECT id, qty FROM stock WHERE id = 1;
GO
-- DELETE
DELETE FROM stock WHERE qty = 0;
SELECT @@ROWCOUNT AS rc;
DELETE stock WHERE id = 999;
SELECT @@ROWCOUNT AS rc;
SELECT id, item FROM stock ORDER BY id;
GO
-- DELETE … FROM join
DELETE s FROM stock s JOIN deliveries d ON d.item = s.item WHERE d.amount = 1;
SELECT id, item FROM stock ORDER BY id;
GO
DELETE FROM stock FROM stock JOIN deliveries ON deliveries.item = stock.item;
SELECT id, item FROM stock ORDER BY id;
GO
-- DELETE TOP / UPDATE TOP
CREATE TABLE queue (id int, done bit);
INSERT INTO queue VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0);
UPDATE TOP (2) queue SET done = 1;
SELECT @@ROWCOUNT AS rc;
SELECT COUNT(*) AS done_count FROM queue WHERE done = 1;
DELETE TOP (3) FROM queue;
SELECT @@ROWCOUNT AS rc;
SELECT COUNT(*) AS left_count FROM queue;
DELETE FROM queue;
SELECT COUNT(*) AS left_count FROM queue;
GO
-- SET NOCOUNT ON hides the counts
SET NOCOUNT ON;
INSERT INTO queue VALUES (7, 1);
UPDATE queue SET done = 0;
SELECT @@ROWCOUNT AS rc;
SET NOCOUNT OFF;
DELETE FROM queue;
GO
-- A key update that moves every row
CREATE TABLE shift (k int PRIMARY KEY, v char(1));
INSERT INTO shift VALUES (1, 'a'), (2, 'b'), (3, 'c');
UPDATE shift SET k = k * 10;
SELECT k, v FROM shift ORDER BY k;
GO
-- Updates that keyshift unique keys are checked against the statement's final state.
CREATE TABLE keyshift (id int PRIMARY KEY, code varchar(10) NOT NULL UNIQUE, v int);
INSERT keyshift VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30);
UPDATE keyshift SET id = id + 1;
SELECT id, code, v FROM keyshift ORDER BY id;
UPDATE keyshift SET id = 5 - id;
SELECT id, code FROM keyshift ORDER BY id;
UPDATE keyshift SET code = CASE code WHEN 'a' THEN 'b' WHEN 'b' THEN 'c' ELSE 'a' END;
SELECT id, code FROM keyshift ORDER BY id;
GO
-- A final state with duplicates fails whole and changes nothing.
UPDATE keyshift SET id = 7;
UPDATE keyshift SET code = 'same' WHERE id < 4;
UPDATE keyshift SET id = id + 1 WHERE id < 3;
SELECT id, code FROM keyshift ORDER BY id;
GO
