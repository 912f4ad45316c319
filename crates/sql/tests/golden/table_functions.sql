-- Multi-statement table-valued functions: RETURNS @t TABLE (…), a body of statements
-- that fills it, RETURN; called in FROM, joined, under CROSS and OUTER APPLY with a
-- column as argument, with defaults, nested, and in the catalog.
SET NOCOUNT ON;
CREATE TABLE staff (id int PRIMARY KEY, name varchar(20) NOT NULL, manager_id int NULL, salary int NOT NULL);
INSERT INTO staff VALUES (1, 'ada', NULL, 300), (2, 'bob', 1, 200), (3, 'cy', 1, 180), (4, 'di', 2, 120),
    (5, 'ed', 4, 90);
GO
-- The classic: a recursive walk of a hierarchy with a loop.
CREATE FUNCTION dbo.reports_of (@manager int)
RETURNS @result TABLE (id int NOT NULL, name varchar(20), depth int)
AS
BEGIN
    DECLARE @depth int = 1;
    INSERT INTO @result SELECT id, name, @depth FROM staff WHERE manager_id = @manager;
    WHILE @@ROWCOUNT > 0
    BEGIN
        SET @depth += 1;
        INSERT INTO @result
        SELECT s.id, s.name, @depth FROM staff s JOIN @result r ON s.manager_id = r.id
        WHERE r.depth = @depth - 1;
    END
    RETURN;
END
GO
SELECT id, name, depth FROM dbo.reports_of(1) ORDER BY depth, id;
SELECT COUNT(*) AS under_bob FROM reports_of(2);
SELECT r.name, s.salary FROM dbo.reports_of(2) AS r JOIN staff s ON s.id = r.id ORDER BY s.salary DESC;
GO
-- A column as the argument, under APPLY; OUTER APPLY keeps the rows with none.
SELECT m.name AS manager, r.name AS report, r.depth
FROM staff m CROSS APPLY dbo.reports_of(m.id) r
WHERE m.id IN (2, 4) ORDER BY m.id, r.depth, r.id;
SELECT m.name, COUNT(r.id) AS reports FROM staff m OUTER APPLY dbo.reports_of(m.id) r GROUP BY m.name ORDER BY m.name;
GO
-- Defaults, a function calling another, a variable argument, an early RETURN.
CREATE FUNCTION dbo.paid_over (@floor int = 100, @limit int = 10)
RETURNS @t TABLE (name varchar(20), salary int, band char(1))
AS
BEGIN
    IF @limit <= 0 RETURN;
    INSERT INTO @t (name, salary) SELECT TOP (@limit) name, salary FROM staff WHERE salary > @floor ORDER BY salary DESC;
    UPDATE @t SET band = CASE WHEN salary >= 200 THEN 'A' ELSE 'B' END;
    DELETE FROM @t WHERE name IN (SELECT name FROM dbo.reports_of(2));
    RETURN;
END
GO
SELECT * FROM dbo.paid_over(DEFAULT, DEFAULT);
DECLARE @f int = 150;
SELECT * FROM dbo.paid_over(@f, 1);
SELECT COUNT(*) AS none FROM dbo.paid_over(0, 0);
GO
-- The catalog.
SELECT name, type, type_desc FROM sys.objects WHERE name IN ('reports_of', 'paid_over') ORDER BY name;
SELECT OBJECTPROPERTY(OBJECT_ID('dbo.reports_of'), 'IsTableFunction') AS is_table_function,
       OBJECTPROPERTY(OBJECT_ID('dbo.reports_of'), 'IsInlineFunction') AS is_inline;
SELECT ROUTINE_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.ROUTINES WHERE ROUTINE_NAME = 'paid_over';
GO
-- Errors: too many arguments, an error inside the body.
SELECT * FROM dbo.reports_of(1, 2);
GO
CREATE FUNCTION dbo.divide_all (@by int) RETURNS @t TABLE (v int) AS
BEGIN
    INSERT INTO @t SELECT salary / @by FROM staff;
    RETURN;
END
GO
SELECT * FROM dbo.divide_all(0);
SELECT 'after' AS next_batch_statement;
GO
SELECT TOP 2 * FROM dbo.divide_all(100) ORDER BY v DESC;
DROP FUNCTION dbo.divide_all;
GO
-- A function's body may change only its own table variables (443) and send no rows (444).
CREATE FUNCTION dbo.sneaky () RETURNS @t TABLE (v int) AS
BEGIN
    INSERT INTO staff VALUES (9, 'zed', NULL, 1);
    RETURN;
END
GO
CREATE FUNCTION dbo.chatty () RETURNS int AS
BEGIN
    SELECT name FROM staff;
    RETURN 1;
END
GO
CREATE FUNCTION dbo.printer () RETURNS @t TABLE (v int) AS
BEGIN
    IF 1 = 1
        PRINT 'hello';
    RETURN;
END
GO
SELECT COUNT(*) AS functions_made FROM sys.objects WHERE name IN ('sneaky', 'chatty', 'printer');
GO
