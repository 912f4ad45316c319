-- INSTEAD OF triggers on views and tables: the statement's rows reach the trigger as
-- inserted and deleted and nothing else happens; the trigger's own change of its table
-- goes through (with the table's AFTER triggers); one per kind of change (2111); none for
-- UPDATE or DELETE on a table whose foreign keys cascade (2113); a view changes only
-- through one (40539); the catalog.
CREATE TABLE customers (id int IDENTITY PRIMARY KEY, name varchar(20) NOT NULL, city varchar(20) NULL);
CREATE TABLE orders (id int IDENTITY PRIMARY KEY, customer_id int NOT NULL, amount decimal(9,2) NOT NULL);
INSERT INTO customers (name, city) VALUES ('ann', 'Oslo'), ('bob', 'Rome');
INSERT INTO orders (customer_id, amount) VALUES (1, 10.50), (1, 4.25), (2, 99.00);
GO
CREATE VIEW customer_orders AS
SELECT o.id AS order_id, c.name AS customer, c.city, o.amount
FROM orders o JOIN customers c ON c.id = o.customer_id;
GO
-- The classic: an insert into a join view, split into its tables by the trigger.
CREATE TRIGGER customer_orders_insert ON customer_orders INSTEAD OF INSERT
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO customers (name, city)
    SELECT DISTINCT i.customer, i.city FROM inserted i
    WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.name = i.customer);
    INSERT INTO orders (customer_id, amount)
    SELECT c.id, i.amount FROM inserted i JOIN customers c ON c.name = i.customer;
    SELECT order_id, customer, city, amount, TRIGGER_NESTLEVEL() AS nest FROM inserted ORDER BY customer;
END
GO
INSERT INTO customer_orders (customer, city, amount) VALUES ('cat', 'Lima', 7.00), ('ann', NULL, 1.00);
SELECT @@ROWCOUNT AS rows_counted;
SELECT * FROM customer_orders ORDER BY order_id;
GO
-- UPDATE and DELETE through the view, with UPDATE() telling which columns were set.
CREATE TRIGGER customer_orders_change ON customer_orders INSTEAD OF UPDATE, DELETE
AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT * FROM inserted)
    BEGIN
        IF UPDATE(city)
            UPDATE c SET city = i.city FROM customers c JOIN inserted i ON i.customer = c.name;
        IF UPDATE(amount)
            UPDATE o SET amount = i.amount FROM orders o JOIN inserted i ON i.order_id = o.id;
        SELECT 'update' AS act, d.order_id, d.amount AS old_amount, i.amount AS new_amount, i.city
        FROM deleted d JOIN inserted i ON i.order_id = d.order_id ORDER BY d.order_id;
    END
    ELSE
    BEGIN
        DELETE o FROM orders o JOIN deleted d ON d.order_id = o.id;
        SELECT 'delete' AS act, order_id FROM deleted ORDER BY order_id;
    END
END
GO
UPDATE customer_orders SET amount = amount * 2 WHERE customer = 'ann';
UPDATE customer_orders SET city = 'Bergen' WHERE order_id = 1;
DELETE FROM customer_orders WHERE amount > 50;
SELECT @@ROWCOUNT AS rows_counted;
SELECT * FROM customer_orders ORDER BY order_id;
GO
-- On a table: a soft delete, and an insert that normalizes its values. The trigger's own
-- change of its table is not taken again, and fires the table's AFTER trigger.
CREATE TABLE notes (id int IDENTITY PRIMARY KEY, body varchar(50) NOT NULL, deleted bit NOT NULL DEFAULT 0,
                    created_by varchar(20) NOT NULL DEFAULT 'system');
CREATE TABLE notes_log (what varchar(60));
GO
CREATE TRIGGER notes_soft_delete ON notes INSTEAD OF DELETE
AS
BEGIN
    SET NOCOUNT ON;
    UPDATE n SET deleted = 1 FROM notes n JOIN deleted d ON d.id = n.id;
END
GO
CREATE TRIGGER notes_clean_insert ON notes INSTEAD OF INSERT
AS
BEGIN
    SET NOCOUNT ON;
    -- inserted holds the defaults of the columns not given, and NULL for the identity.
    SELECT id, body, deleted, created_by FROM inserted;
    INSERT INTO notes (body, created_by) SELECT UPPER(LTRIM(body)), created_by FROM inserted;
END
GO
CREATE TRIGGER notes_after ON notes AFTER INSERT, UPDATE
AS
    INSERT INTO notes_log SELECT 'after ' + CAST(COUNT(*) AS varchar(10)) + ' row(s), nest ' + CAST(TRIGGER_NESTLEVEL() AS varchar(10)) FROM inserted;
GO
INSERT INTO notes (body) VALUES ('  first'), ('second');
DELETE FROM notes WHERE id = 1;
SELECT id, body, deleted, created_by FROM notes ORDER BY id;
SELECT what FROM notes_log;
GO
-- OUTPUT INTO gets the rows the statement would have changed; OUTPUT without INTO is 334.
DECLARE @gone TABLE (id int, body varchar(50));
DELETE FROM notes OUTPUT deleted.id, deleted.body INTO @gone WHERE id = 2;
SELECT * FROM @gone;
GO
DELETE FROM notes OUTPUT deleted.id WHERE id = 2;
GO
-- DISABLE TRIGGER: the statement runs against the table again.
DISABLE TRIGGER notes_soft_delete ON notes;
DELETE FROM notes WHERE id = 1;
ENABLE TRIGGER notes_soft_delete ON notes;
SELECT id, body, deleted FROM notes ORDER BY id;
GO
-- The catalog.
SELECT name, OBJECT_NAME(parent_id) AS parent, is_instead_of_trigger, is_disabled
FROM sys.triggers ORDER BY name;
SELECT OBJECTPROPERTY(OBJECT_ID('customer_orders_insert'), 'ExecIsInsteadOfTrigger') AS instead,
       OBJECTPROPERTY(OBJECT_ID('customer_orders_insert'), 'ExecIsAfterTrigger') AS after_,
       OBJECTPROPERTY(OBJECT_ID('notes'), 'HasInsteadOfTrigger') AS table_has_instead,
       OBJECTPROPERTY(OBJECT_ID('notes'), 'HasAfterTrigger') AS table_has_after,
       OBJECTPROPERTY(OBJECT_ID('customer_orders'), 'HasInsteadOfTrigger') AS view_has_instead;
GO
-- Errors: a second INSTEAD OF trigger for the same change (2111), an AFTER trigger on a
-- view (8197), INSTEAD OF DELETE on a table whose foreign key cascades (2113), a change
-- through a view without a trigger for it (40539), MERGE into such a target (40540, or 5316
-- when triggers take only some of its actions),
-- OUTPUT INTO a view (330).
CREATE TRIGGER second_insert ON customer_orders INSTEAD OF INSERT AS PRINT 1;
GO
CREATE TRIGGER second_delete ON notes INSTEAD OF UPDATE, DELETE AS PRINT 1;
GO
CREATE TRIGGER after_on_view ON customer_orders AFTER INSERT AS PRINT 1;
GO
CREATE TABLE lines (id int PRIMARY KEY, order_id int REFERENCES orders (id) ON DELETE CASCADE);
GO
CREATE TRIGGER lines_delete ON lines INSTEAD OF DELETE AS PRINT 1;
GO
CREATE TRIGGER lines_insert ON lines INSTEAD OF INSERT AS PRINT 'lines insert taken';
GO
INSERT INTO lines VALUES (1, 1);
SELECT COUNT(*) AS lines_rows FROM lines;
GO
CREATE VIEW plain AS SELECT id, name FROM customers;
GO
INSERT INTO plain (name) VALUES ('dan');
GO
UPDATE plain SET name = 'x';
GO
MERGE INTO notes t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE;
GO
-- Some of a MERGE's actions taken by INSTEAD OF triggers, some not: 5316.
MERGE INTO notes t USING (SELECT 1 AS id) s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET body = 'x' WHEN NOT MATCHED THEN INSERT (body) VALUES ('y');
GO
MERGE INTO plain t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE;
GO
DECLARE @x int;
UPDATE customers SET city = city OUTPUT inserted.name INTO customer_orders (customer) WHERE id = 1;
GO
-- Dropping a view drops its triggers.
DROP VIEW customer_orders;
SELECT COUNT(*) AS triggers_left FROM sys.triggers WHERE name LIKE 'customer_orders%';
GO
