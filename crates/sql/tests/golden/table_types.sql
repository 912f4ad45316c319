-- Table types (CREATE TYPE … AS TABLE): table variables of a type, table-valued
-- parameters (READONLY; 352, 346, 10700, 206), sp_executesql with one, the catalog, and
-- DROP TYPE.
CREATE TYPE dbo.OrderLines AS TABLE (
    line int NOT NULL PRIMARY KEY,
    sku varchar(20) NOT NULL,
    qty int NOT NULL CHECK (qty > 0),
    price decimal(9, 2) NULL DEFAULT 0
);
CREATE TYPE IdList AS TABLE (id int NOT NULL);
CREATE TABLE orders (id int IDENTITY PRIMARY KEY, lines int NOT NULL, total decimal(12, 2) NOT NULL);
CREATE TABLE order_lines (order_id int NOT NULL, line int NOT NULL, sku varchar(20) NOT NULL, qty int NOT NULL,
                          PRIMARY KEY (order_id, line));
GO
CREATE PROCEDURE dbo.place_order @lines dbo.OrderLines READONLY, @order_id int OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO orders (lines, total) SELECT COUNT(*), SUM(qty * ISNULL(price, 0)) FROM @lines;
    SET @order_id = SCOPE_IDENTITY();
    INSERT INTO order_lines SELECT @order_id, line, sku, qty FROM @lines;
    SELECT line, sku, qty, price FROM @lines ORDER BY line;
END
GO
-- A variable of the type: its constraints hold (the CHECK, the key, the default).
DECLARE @l dbo.OrderLines;
INSERT INTO @l (line, sku, qty, price) VALUES (1, 'apple', 3, 0.50), (2, 'pear', 2, 0.75);
INSERT INTO @l (line, sku, qty) VALUES (3, 'plum', 1);
DECLARE @id int;
EXEC dbo.place_order @l, @id OUTPUT;
SELECT @id AS order_id;
SELECT o.id, o.lines, o.total, ol.line, ol.sku FROM orders o JOIN order_lines ol ON ol.order_id = o.id ORDER BY ol.line;
GO
DECLARE @l OrderLines;
INSERT INTO @l VALUES (1, 'x', 0, 1);
GO
-- Omitted, a table-valued parameter is an empty table of its type.
CREATE PROCEDURE count_ids @ids IdList READONLY AS SELECT COUNT(*) AS n FROM @ids;
GO
EXEC count_ids;
DECLARE @ids IdList;
INSERT INTO @ids VALUES (1), (2), (3);
EXEC count_ids @ids = @ids;
-- sp_executesql takes one too.
EXEC sp_executesql N'SELECT SUM(id) AS total FROM @p', N'@p IdList READONLY', @p = @ids;
GO
-- Errors: not READONLY (352), READONLY on a scalar (346), changing one (10700), a
-- variable of another type or a value (206), an unknown type (2715).
CREATE PROCEDURE bad1 @ids IdList AS SELECT 1;
GO
CREATE PROCEDURE bad2 @n int READONLY AS SELECT 1;
GO
CREATE PROCEDURE bad3 @ids IdList READONLY AS DELETE FROM @ids;
GO
EXEC bad3;
GO
DECLARE @l dbo.OrderLines;
EXEC count_ids @l;
GO
EXEC count_ids 5;
GO
SELECT 'not reached' AS x;
DECLARE @x dbo.NoSuchType;
GO
CREATE PROCEDURE bad4 @x dbo.NoSuchType READONLY AS SELECT 1;
GO
-- The catalog.
SELECT name, is_table_type, is_user_defined, TYPE_NAME(user_type_id) AS type_name_
FROM sys.types WHERE is_user_defined = 1 ORDER BY name;
SELECT name, is_table_type, is_memory_optimized FROM sys.table_types ORDER BY name;
SELECT TYPE_ID('IdList') - TYPE_ID('dbo.IdList') AS same, TYPE_ID('nosuch') AS missing;
SELECT p.name AS parameter, TYPE_NAME(p.user_type_id) AS type, p.is_readonly
FROM sys.parameters p WHERE p.object_id = OBJECT_ID('place_order') ORDER BY p.parameter_id;
GO
DROP TYPE IdList;
GO
DROP PROCEDURE count_ids, bad3;
DROP TYPE IdList;
DROP TYPE IF EXISTS IdList;
SELECT COUNT(*) AS types_left FROM sys.table_types;
GO
