-- Trigger recursion: RECURSIVE_TRIGGERS (a trigger fires again through its own changes,
-- to 32 levels: 217) and the server's 'nested triggers' option (0: a trigger's changes
-- fire no AFTER trigger).
CREATE DATABASE rec;
GO
USE rec;
CREATE TABLE countdown (n int);
CREATE TABLE fired (n int, nest int);
GO
CREATE TRIGGER tick ON countdown AFTER INSERT AS
BEGIN
    SET NOCOUNT ON;
    -- A statement that changes no row fires its triggers too: recursion stops here.
    IF NOT EXISTS (SELECT * FROM inserted) RETURN;
    INSERT INTO fired SELECT n, TRIGGER_NESTLEVEL() FROM inserted;
    INSERT INTO countdown SELECT n - 1 FROM inserted WHERE n > 1;
END
GO
-- OFF (the default): the trigger's own insert does not fire it again.
INSERT INTO countdown VALUES (3);
SELECT n, nest FROM fired ORDER BY nest;
GO
ALTER DATABASE rec SET RECURSIVE_TRIGGERS ON;
SELECT is_recursive_triggers_on, DATABASEPROPERTYEX('rec', 'IsRecursiveTriggersEnabled') AS property
FROM sys.databases WHERE name = 'rec';
DELETE FROM fired;
DELETE FROM countdown;
INSERT INTO countdown VALUES (3);
SELECT n, nest FROM fired ORDER BY nest;
GO
-- Past 32 levels: 217, and the statement's changes are undone.
DELETE FROM fired;
DELETE FROM countdown;
INSERT INTO countdown VALUES (40);
GO
SELECT (SELECT COUNT(*) FROM fired) AS fired_rows, (SELECT COUNT(*) FROM countdown) AS countdown_rows;
GO
ALTER DATABASE rec SET RECURSIVE_TRIGGERS OFF;
CREATE TABLE a (x int);
CREATE TABLE b (x int);
GO
CREATE TRIGGER a_to_b ON a AFTER INSERT AS INSERT INTO b SELECT x FROM inserted;
GO
CREATE TRIGGER b_fired ON b AFTER INSERT AS INSERT INTO fired SELECT x, TRIGGER_NESTLEVEL() FROM inserted;
GO
DELETE FROM fired;
INSERT INTO a VALUES (1);
EXEC sp_configure 'nested triggers', 0;
RECONFIGURE;
INSERT INTO a VALUES (2);
EXEC sp_configure 'nested triggers', 1;
RECONFIGURE;
SELECT n, nest FROM fired ORDER BY n;
SELECT x FROM b ORDER BY x;
GO
USE master;
DROP DATABASE rec;
GO
