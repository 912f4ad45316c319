-- DML triggers: AFTER INSERT, UPDATE, DELETE with inserted and deleted, UPDATE(),
-- COLUMNS_UPDATED(), TRIGGER_NESTLEVEL(), @@ROWCOUNT, nesting, ROLLBACK (3609), ENABLE
-- and DISABLE, 334, and the catalog.
CREATE TABLE accounts (id int PRIMARY KEY, owner varchar(20) NOT NULL, balance int NOT NULL);
CREATE TABLE audit (seq int IDENTITY PRIMARY KEY, act varchar(10), id int, old_balance int, new_balance int, nest int);
GO
CREATE TRIGGER trg_accounts_audit ON accounts
AFTER INSERT, UPDATE, DELETE
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO audit (act, id, old_balance, new_balance, nest)
    SELECT CASE WHEN d.id IS NULL THEN 'insert' WHEN i.id IS NULL THEN 'delete' ELSE 'update' END,
           COALESCE(i.id, d.id), d.balance, i.balance, TRIGGER_NESTLEVEL()
    FROM inserted i FULL JOIN deleted d ON i.id = d.id;
END
GO
INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);
SELECT @@ROWCOUNT AS inserted_rows;
UPDATE accounts SET balance = balance + 10 WHERE id = 1;
DELETE FROM accounts WHERE id = 2;
-- A statement that changes nothing fires its triggers too.
UPDATE accounts SET balance = 0 WHERE id = 99;
SELECT seq, act, id, old_balance, new_balance, nest FROM audit ORDER BY seq;
GO
-- UPDATE() and COLUMNS_UPDATED(); a trigger's own results come before the statement's count.
CREATE TRIGGER trg_accounts_columns ON accounts FOR UPDATE
AS
IF UPDATE(balance)
    SELECT 'balance changed' AS what, COLUMNS_UPDATED() AS mask, @@ROWCOUNT AS rows_in_trigger;
IF UPDATE(owner)
    PRINT 'owner changed';
GO
UPDATE accounts SET balance = balance - 1;
UPDATE accounts SET owner = 'ann2';
GO
DROP TRIGGER trg_accounts_columns;
GO
-- A trigger that refuses a change: ROLLBACK in the trigger ends the batch (3609).
CREATE TRIGGER trg_no_negative ON accounts AFTER UPDATE
AS
IF EXISTS (SELECT * FROM inserted WHERE balance < 0)
BEGIN
    RAISERROR('Balance may not go below zero.', 16, 1);
    ROLLBACK TRANSACTION;
END
GO
UPDATE accounts SET balance = -5 WHERE id = 1;
SELECT 'not reached' AS never;
GO
SELECT id, balance FROM accounts;
SELECT @@TRANCOUNT AS trancount;
GO
-- In an explicit transaction the rollback undoes everything before it too.
BEGIN TRAN;
INSERT INTO accounts VALUES (3, 'cy', 5);
UPDATE accounts SET balance = -1 WHERE id = 3;
GO
SELECT @@TRANCOUNT AS trancount, COUNT(*) AS accounts FROM accounts;
GO
-- Disabled, a trigger does not fire; enabled again, it does.
DISABLE TRIGGER trg_no_negative ON accounts;
UPDATE accounts SET balance = -7 WHERE id = 1;
ENABLE TRIGGER trg_no_negative ON accounts;
ALTER TABLE accounts DISABLE TRIGGER ALL;
UPDATE accounts SET balance = 1 WHERE id = 1;
ALTER TABLE accounts ENABLE TRIGGER trg_accounts_audit;
SELECT name, is_disabled, is_instead_of_trigger, OBJECT_NAME(parent_id) AS parent FROM sys.triggers ORDER BY name;
GO
ALTER TABLE accounts ENABLE TRIGGER ALL;
GO
-- An error in a trigger ends the batch and undoes the statement.
CREATE TRIGGER trg_bad ON audit AFTER INSERT AS SELECT 1 / 0 AS boom;
GO
INSERT INTO accounts VALUES (4, 'dee', 1);
SELECT 'not reached' AS never;
GO
SELECT COUNT(*) AS dee FROM accounts WHERE id = 4;
DROP TRIGGER trg_bad;
GO
-- Nested: a trigger's change fires the next table's trigger.
CREATE TABLE totals (n int);
INSERT INTO totals VALUES (0);
GO
CREATE TRIGGER trg_audit_count ON audit AFTER INSERT
AS UPDATE totals SET n = n + (SELECT COUNT(*) FROM inserted);
GO
INSERT INTO accounts VALUES (5, 'eve', 9), (6, 'fay', 8);
SELECT n AS audited FROM totals;
SELECT TOP 2 act, id, nest FROM audit ORDER BY seq DESC;
GO
-- OUTPUT without INTO on a table with enabled triggers: 334; with INTO it is fine.
UPDATE accounts SET balance = 2 OUTPUT inserted.id WHERE id = 5;
GO
DECLARE @ids TABLE (id int);
UPDATE accounts SET balance = 2 OUTPUT inserted.id INTO @ids WHERE id = 5;
SELECT id FROM @ids;
GO
-- MERGE fires each action's triggers.
MERGE accounts t USING (VALUES (5, 3), (7, 7)) s (id, balance) ON t.id = s.id
WHEN MATCHED THEN UPDATE SET balance = s.balance
WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'new', s.balance);
SELECT TOP 2 act, id, old_balance, new_balance FROM audit ORDER BY seq DESC;
GO
-- The catalog.
SELECT name, type, type_desc, OBJECT_NAME(parent_object_id) AS parent FROM sys.objects WHERE type = 'TR' ORDER BY name;
SELECT OBJECTPROPERTY(OBJECT_ID('trg_no_negative'), 'IsTrigger') AS is_trigger;
EXEC sp_helptext 'trg_audit_count';
GO
-- Errors.
CREATE TRIGGER trg_x ON nosuch AFTER INSERT AS PRINT 1;
GO
CREATE TRIGGER other.trg_x ON accounts AFTER INSERT AS PRINT 1;
GO
CREATE TRIGGER trg_accounts_audit ON accounts AFTER INSERT AS PRINT 1;
GO
DROP TRIGGER nosuch;
GO
DISABLE TRIGGER nosuch ON accounts;
GO
SELECT 1 AS x
CREATE TRIGGER trg_z ON accounts AFTER INSERT AS PRINT 1;
GO
-- INSERT … EXEC fires the table's triggers as INSERT does.
CREATE PROCEDURE new_accounts AS SELECT 71, 'gus', 70 UNION ALL SELECT 72, 'hal', 80;
GO
DELETE FROM audit;
INSERT INTO accounts EXEC new_accounts;
SELECT act, id, new_balance FROM audit ORDER BY id;
GO
-- A table's triggers go with it.
DROP TABLE accounts;
SELECT COUNT(*) AS triggers_left FROM sys.triggers WHERE name LIKE 'trg_accounts%';
GO
