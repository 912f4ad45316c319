-- CHECK, UNIQUE, PRIMARY KEY and FOREIGN KEY enforcement; data stays consistent.
CREATE TABLE products (
    id int CONSTRAINT pk_products PRIMARY KEY,
    code varchar(10) CONSTRAINT uq_products_code UNIQUE,
    price decimal(8,2) NOT NULL CONSTRAINT ck_price CHECK (price >= 0),
    qty int NOT NULL DEFAULT 0,
    CONSTRAINT ck_qty_price CHECK (qty < 1000 OR price > 1)
);
INSERT INTO products (id, code, price) VALUES (1, 'A1', 9.99), (2, 'B2', 0);
GO
INSERT INTO products (id, code, price) VALUES (1, 'C3', 1);
SELECT id, code, price, qty FROM products ORDER BY id;
GO
INSERT INTO products (id, code, price) VALUES (3, 'A1', 1);
SELECT id, code FROM products ORDER BY id;
GO
INSERT INTO products (id, code, price) VALUES (3, 'C3', -5);
SELECT COUNT(*) AS n FROM products;
GO
INSERT INTO products (id, code, price, qty) VALUES (3, 'C3', 0.5, 5000);
SELECT COUNT(*) AS n FROM products;
GO
INSERT INTO products (id, code, price) VALUES (3, 'C3', NULL);
SELECT COUNT(*) AS n FROM products;
GO
-- NULL passes a CHECK; UNIQUE allows one NULL only.
INSERT INTO products (id, code, price) VALUES (3, NULL, 3), (4, 'D4', 4);
INSERT INTO products (id, code, price) VALUES (5, NULL, 5);
SELECT id, code FROM products ORDER BY id;
GO
-- A multi-row insert is all or nothing.
INSERT INTO products (id, code, price) VALUES (10, 'X', 1), (11, 'Y', 1), (10, 'Z', 1);
SELECT COUNT(*) AS n FROM products;
GO
UPDATE products SET price = -1 WHERE id = 1;
SELECT id, price FROM products WHERE id = 1;
GO
UPDATE products SET code = 'B2' WHERE id = 1;
SELECT id, code FROM products ORDER BY id;
GO
UPDATE products SET id = id + 10;
SELECT id FROM products ORDER BY id;
GO
UPDATE products SET price = NULL WHERE id = 11;
GO
CREATE TABLE customers (id int PRIMARY KEY, name varchar(20) NOT NULL);
CREATE TABLE orders (
    id int PRIMARY KEY,
    customer_id int CONSTRAINT fk_orders_customer REFERENCES customers (id),
    note varchar(20)
);
INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob');
INSERT INTO orders VALUES (100, 1, 'first'), (101, 2, 'second'), (102, NULL, 'none');
GO
INSERT INTO orders VALUES (103, 9, 'bad');
SELECT COUNT(*) AS n FROM orders;
GO
UPDATE orders SET customer_id = 7 WHERE id = 100;
SELECT id, customer_id FROM orders ORDER BY id;
GO
DELETE FROM customers WHERE id = 1;
SELECT id, name FROM customers ORDER BY id;
GO
UPDATE customers SET id = 5 WHERE id = 2;
SELECT id FROM customers ORDER BY id;
GO
DROP TABLE customers;
GO
TRUNCATE TABLE customers;
GO
DELETE FROM orders WHERE customer_id = 2;
DELETE FROM customers WHERE id = 2;
SELECT id, name FROM customers ORDER BY id;
GO
-- ON DELETE CASCADE and ON DELETE SET NULL
CREATE TABLE parents (id int PRIMARY KEY);
CREATE TABLE kids_cascade (id int PRIMARY KEY, parent_id int REFERENCES parents (id) ON DELETE CASCADE);
CREATE TABLE kids_null (id int PRIMARY KEY, parent_id int NULL,
    CONSTRAINT fk_kids_null FOREIGN KEY (parent_id) REFERENCES parents (id) ON DELETE SET NULL);
INSERT INTO parents VALUES (1), (2), (3);
INSERT INTO kids_cascade VALUES (10, 1), (11, 1), (12, 2);
INSERT INTO kids_null VALUES (20, 1), (21, 2), (22, 3);
DELETE FROM parents WHERE id = 1;
SELECT id, parent_id FROM kids_cascade ORDER BY id;
SELECT id, parent_id FROM kids_null ORDER BY id;
DELETE FROM parents WHERE id IN (2, 3);
SELECT COUNT(*) AS cascade_left FROM kids_cascade;
SELECT id, parent_id FROM kids_null ORDER BY id;
GO
-- Composite keys
CREATE TABLE pairs (a int NOT NULL, b int NOT NULL, PRIMARY KEY (a, b));
CREATE TABLE pair_refs (id int, a int, b int, CONSTRAINT fk_pair FOREIGN KEY (a, b) REFERENCES pairs (a, b));
INSERT INTO pairs VALUES (1, 1), (1, 2);
INSERT INTO pair_refs VALUES (1, 1, 2), (2, NULL, 5);
SELECT id, a, b FROM pair_refs ORDER BY id;
GO
-- Constraint names are unique in the schema.
CREATE TABLE clash (a int CONSTRAINT pk_products PRIMARY KEY);
GO
-- A primary key column declared NULL is error 8111; left unsaid, it becomes NOT NULL.
CREATE TABLE pk_null (a int NULL, PRIMARY KEY (a));
GO
CREATE TABLE pk_null (a int NULL PRIMARY KEY);
GO
CREATE TABLE pk_implicit (a int, b varchar(5), CONSTRAINT pk_implicit_ab PRIMARY KEY (a, b));
SELECT name, is_nullable FROM sys.columns WHERE object_id = OBJECT_ID('pk_implicit') ORDER BY column_id;
CREATE TABLE pk_later (a int NOT NULL, b int NULL);
ALTER TABLE pk_later ADD CONSTRAINT pk_later_b PRIMARY KEY (b);
ALTER TABLE pk_later ADD CONSTRAINT pk_later_a PRIMARY KEY (a);
SELECT name FROM sys.key_constraints WHERE parent_object_id = OBJECT_ID('pk_later');
GO
-- Type names and ids.
SELECT TYPE_NAME(56) AS int_name, TYPE_NAME(108) AS numeric_name, TYPE_NAME(256) AS sysname_name,
       TYPE_ID('int') AS int_id, TYPE_ID('sys.nvarchar') AS nvarchar_id, TYPE_ID('sysname') AS sysname_id,
       TYPE_ID('no_such_type') AS missing;
SELECT c.name, TYPE_NAME(c.user_type_id) AS type FROM sys.columns c WHERE c.object_id = OBJECT_ID('pk_implicit') ORDER BY c.column_id;
SELECT SCHEMA_NAME(1) AS s1, SCHEMA_NAME(4) AS s4;
GO
-- Constraint names are unique per schema, as in SQL Server.
create schema s_other;
go
create table dbo.same_names (x int constraint ck_same check (x > 0), y int constraint uq_same unique);
create table s_other.same_names (x int constraint ck_same check (x > 0), y int constraint uq_same unique);
select object_schema_name(parent_object_id) as schema_name, name from sys.check_constraints where name = 'ck_same' order by 1;
go
create table dbo.other_names (x int constraint ck_same check (x > 0));
go
drop table s_other.same_names;
drop table dbo.same_names;
drop schema s_other;
go
-- A table that references itself: a row its children keep is refused, but one statement
-- may delete parents with their children (constraints hold at the statement's end).
create table emp (id int primary key, boss int references emp (id));
insert emp values (1, null), (2, 1), (3, 2), (4, null);
go
delete from emp where id = 1;
go
delete from emp where id in (2, 3);
select id from emp order by id;
delete from emp;
select count(*) as left_over from emp;
drop table emp;
go
