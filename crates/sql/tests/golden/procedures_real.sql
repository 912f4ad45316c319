-- Procedures as SQL Server users write them: a MERGE upsert with OUTPUT, an audit
-- trigger, JSON in and out, a ranking report, running totals, TRY/CATCH around a
-- transaction, string aggregation per group, a cursor loop.
CREATE TABLE customers (id int IDENTITY PRIMARY KEY, email nvarchar(100) NOT NULL UNIQUE, name nvarchar(50),
                        updated_at datetime2(0) NULL);
CREATE TABLE orders (id int IDENTITY PRIMARY KEY, customer_id int NOT NULL REFERENCES customers (id),
                     amount decimal(9, 2) NOT NULL CHECK (amount > 0), placed date NOT NULL);
CREATE TABLE audit_log (id int IDENTITY PRIMARY KEY, table_name sysname, action varchar(10), row_id int,
                        detail nvarchar(max));
GO
CREATE TRIGGER customers_audit ON customers AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO audit_log (table_name, action, row_id, detail)
    SELECT 'customers',
           CASE WHEN d.id IS NULL THEN 'insert' WHEN i.id IS NULL THEN 'delete' ELSE 'update' END,
           COALESCE(i.id, d.id),
           (SELECT i.email AS new_email, d.email AS old_email, i.name AS new_name FOR JSON PATH, WITHOUT_ARRAY_WRAPPER)
    FROM inserted i FULL JOIN deleted d ON i.id = d.id;
END
GO
-- Upsert customers from a JSON array; returns what it did.
CREATE PROCEDURE upsert_customers @json nvarchar(max) AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @changes TABLE (action nvarchar(10), id int, email nvarchar(100));
    MERGE customers WITH (HOLDLOCK) AS t
    USING (SELECT email, name FROM OPENJSON(@json) WITH (email nvarchar(100), name nvarchar(50))) AS s
    ON t.email = s.email
    WHEN MATCHED AND ISNULL(t.name, N'') <> ISNULL(s.name, N'') THEN
        UPDATE SET name = s.name, updated_at = '2026-11-30T12:00:00'
    WHEN NOT MATCHED THEN
        INSERT (email, name) VALUES (s.email, s.name)
    OUTPUT $action, inserted.id, inserted.email INTO @changes;
    SELECT action, COUNT(*) AS n FROM @changes GROUP BY action ORDER BY action;
END
GO
-- Places an order; a bad one is rolled back and reported, as applications expect.
CREATE PROCEDURE place_order @email nvarchar(100), @amount decimal(9, 2), @placed date, @order_id int OUTPUT AS
BEGIN
    SET NOCOUNT ON;
    BEGIN TRY
        BEGIN TRANSACTION;
        DECLARE @customer int = (SELECT id FROM customers WHERE email = @email);
        IF @customer IS NULL
            THROW 50001, 'No such customer.', 1;
        INSERT INTO orders (customer_id, amount, placed) VALUES (@customer, @amount, @placed);
        SET @order_id = SCOPE_IDENTITY();
        COMMIT TRANSACTION;
        RETURN 0;
    END TRY
    BEGIN CATCH
        IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
        SET @order_id = NULL;
        SELECT ERROR_NUMBER() AS error_number, ERROR_MESSAGE() AS error_message;
        RETURN 1;
    END CATCH
END
GO
-- A report: each customer's orders ranked, running totals, share of the total, and the
-- customer's order dates as one string; as JSON when asked.
CREATE PROCEDURE customer_report @as_json bit = 0 AS
BEGIN
    SET NOCOUNT ON;
    IF @as_json = 1
        SELECT c.email,
               (SELECT o.amount, o.placed FROM orders o WHERE o.customer_id = c.id ORDER BY o.placed FOR JSON PATH) AS orders
        FROM customers c ORDER BY c.email FOR JSON PATH, ROOT('customers');
    ELSE
        SELECT c.email, o.placed, o.amount,
               ROW_NUMBER() OVER (PARTITION BY c.id ORDER BY o.placed) AS nth,
               SUM(o.amount) OVER (PARTITION BY c.id ORDER BY o.placed ROWS UNBOUNDED PRECEDING) AS running,
               CAST(100.0 * o.amount / SUM(o.amount) OVER () AS decimal(5, 1)) AS pct_of_all,
               CAST((SELECT STRING_AGG(CONVERT(varchar(10), o2.placed, 23), ',') WITHIN GROUP (ORDER BY o2.placed)
                     FROM orders o2 WHERE o2.customer_id = c.id) AS varchar(30)) AS dates
        FROM customers c JOIN orders o ON o.customer_id = c.id
        ORDER BY c.email, o.placed;
END
GO
EXEC upsert_customers N'[{"email": "ann@x.org", "name": "Ann"}, {"email": "bo@x.org", "name": "Bo"}]';
EXEC upsert_customers N'[{"email": "ann@x.org", "name": "Ann Lee"}, {"email": "bo@x.org", "name": "Bo"}, {"email": "cy@x.org"}]';
GO
DECLARE @id int, @rc int;
EXEC @rc = place_order N'ann@x.org', 10.00, '2026-01-05', @id OUTPUT;
SELECT @rc AS rc, @id AS order_id;
EXEC @rc = place_order N'ann@x.org', 25.50, '2026-02-01', @id OUTPUT;
EXEC @rc = place_order N'bo@x.org', 5.00, '2026-01-20', @id OUTPUT;
EXEC @rc = place_order N'nobody@x.org', 1.00, '2026-01-20', @id OUTPUT;
SELECT @rc AS rc, @id AS order_id;
EXEC @rc = place_order N'bo@x.org', -1.00, '2026-01-21', @id OUTPUT;
SELECT @rc AS rc, @@TRANCOUNT AS trancount, (SELECT COUNT(*) FROM orders) AS orders;
GO
EXEC customer_report;
EXEC customer_report @as_json = 1;
GO
SELECT action, row_id, CAST(JSON_VALUE(detail, '$.new_email') AS nvarchar(20)) AS email,
       CAST(JSON_VALUE(detail, '$.new_name') AS nvarchar(20)) AS name
FROM audit_log ORDER BY id;
GO
-- An old-style procedure: a cursor loop over the customers, one statement per row, with
-- EXEC inside the loop and a running message.
CREATE PROCEDURE apply_loyalty_bonus @min_total decimal(9, 2) AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @customer_id int, @email nvarchar(100), @total decimal(9, 2), @done int = 0;
    DECLARE bonus_cursor CURSOR LOCAL FORWARD_ONLY READ_ONLY FOR
        SELECT c.id, c.email, SUM(o.amount)
        FROM customers c JOIN orders o ON o.customer_id = c.id
        GROUP BY c.id, c.email
        HAVING SUM(o.amount) >= @min_total
        ORDER BY c.id;
    OPEN bonus_cursor;
    FETCH NEXT FROM bonus_cursor INTO @customer_id, @email, @total;
    WHILE @@FETCH_STATUS = 0
    BEGIN
        INSERT INTO orders (customer_id, amount, placed) VALUES (@customer_id, @total / 10, '2026-03-01');
        SET @done += 1;
        PRINT CONCAT('bonus for ', @email, ': ', @total / 10);
        FETCH NEXT FROM bonus_cursor INTO @customer_id, @email, @total;
    END
    CLOSE bonus_cursor;
    DEALLOCATE bonus_cursor;
    RETURN @done;
END
GO
DECLARE @rc int;
EXEC @rc = apply_loyalty_bonus 20;
SELECT @rc AS customers_given_a_bonus, CURSOR_STATUS('global', 'bonus_cursor') AS cursor_left_behind;
SELECT customer_id, amount, placed FROM orders WHERE placed = '2026-03-01' ORDER BY customer_id;
GO
