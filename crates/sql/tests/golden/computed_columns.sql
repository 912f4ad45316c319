-- Computed columns: computed from the row's other columns whenever it is written, typed
-- by their expression, indexable, and shown in the catalog.
CREATE TABLE lines (
    id int IDENTITY PRIMARY KEY,
    price decimal(9, 2) NOT NULL,
    qty int NOT NULL,
    total AS price * qty PERSISTED,
    label AS CONCAT('#', id, ' x', qty),
    big AS CASE WHEN price * qty > 100 THEN 1 ELSE 0 END
);
CREATE INDEX ix_total ON lines (total);
GO
INSERT INTO lines (price, qty) VALUES (10.50, 3), (99.99, 2);
INSERT INTO lines VALUES (1.25, 4);
SELECT id, price, qty, total, label, big FROM lines ORDER BY id;
GO
UPDATE lines SET qty = qty + 10 WHERE id = 1;
SELECT id, total, label, big FROM lines WHERE total > 100 ORDER BY total;
GO
MERGE lines t USING (VALUES (2, 1)) s (id, qty) ON t.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.qty;
SELECT id, total FROM lines WHERE id = 2;
GO
SELECT name, is_computed FROM sys.columns WHERE object_id = OBJECT_ID('lines') ORDER BY column_id;
SELECT name, definition, is_persisted, TYPE_NAME(system_type_id) AS type, precision, scale FROM sys.computed_columns ORDER BY column_id;
SELECT COLUMNPROPERTY(OBJECT_ID('lines'), 'total', 'IsComputed') AS total_computed, COLUMNPROPERTY(OBJECT_ID('lines'), 'qty', 'IsComputed') AS qty_computed;
GO
-- Added to a table that has rows: every row gets its value.
ALTER TABLE lines ADD tax AS price * qty * 0.2;
GO
SELECT id, tax FROM lines ORDER BY id;
GO
ALTER TABLE lines ADD tax2 AS total * 0.2;
GO
-- Errors: a computed column is not written to, reads no computed column and no subquery.
INSERT INTO lines (price, qty, total) VALUES (1, 1, 1);
GO
UPDATE lines SET total = 0;
GO
CREATE TABLE bad1 (a int, b AS a + 1, c AS b + 1);
GO
CREATE TABLE bad2 (a int, b AS (SELECT 1));
GO
CREATE TABLE bad3 (a int, b AS nosuch + 1);
GO
