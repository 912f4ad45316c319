-- MERGE: every clause, OUTPUT with $action, the errors SQL Server gives.
CREATE TABLE stock (sku varchar(10) PRIMARY KEY, qty int NOT NULL CHECK (qty >= 0), note varchar(20) DEFAULT 'new');
CREATE TABLE delivery (sku varchar(10), qty int);
INSERT INTO stock (sku, qty, note) VALUES ('apple', 10, 'old'), ('pear', 5, 'old'), ('plum', 0, 'old'), ('kiwi', 7, 'old');
INSERT INTO delivery VALUES ('apple', 3), ('fig', 4), ('plum', 2);
GO
-- An upsert: matched rows update, source rows without a match insert.
MERGE stock AS t
USING delivery AS s ON t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty, note = 'restocked'
WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, s.qty);
SELECT @@ROWCOUNT AS merged;
SELECT sku, qty, note FROM stock ORDER BY sku;
GO
-- Every clause, with conditions, and OUTPUT of $action, the source, deleted and inserted.
MERGE INTO stock WITH (HOLDLOCK) AS t
USING (VALUES ('apple', 0), ('fig', 1), ('lime', 9), ('grape', 0)) AS s (sku, qty)
ON t.sku = s.sku
WHEN MATCHED AND s.qty = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET t.qty += s.qty
WHEN NOT MATCHED BY TARGET AND s.qty > 0 THEN INSERT VALUES (s.sku, s.qty, 'fresh')
WHEN NOT MATCHED BY SOURCE AND t.qty < 3 THEN UPDATE SET note = 'low'
OUTPUT $action, s.sku AS source_sku, deleted.qty AS was, inserted.qty AS now, inserted.note;
SELECT sku, qty, note FROM stock ORDER BY sku;
GO
-- NOT MATCHED BY SOURCE deletes what the source no longer has (a full refresh).
DECLARE @log TABLE (act nvarchar(10), sku varchar(10));
MERGE stock t
USING (SELECT sku FROM stock WHERE qty >= 5) s ON t.sku = s.sku
WHEN NOT MATCHED BY SOURCE THEN DELETE
OUTPUT $action, deleted.sku INTO @log;
SELECT act, sku FROM @log ORDER BY sku;
SELECT sku FROM stock ORDER BY sku;
GO
-- A target row two source rows match: 8672, and nothing changes.
MERGE stock t USING (VALUES ('fig', 1), ('fig', 2)) s (sku, qty) ON t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = s.qty;
SELECT sku, qty FROM stock WHERE sku = 'fig';
GO
-- Two source rows matching one target row is no error when no clause acts on it.
MERGE stock t USING (VALUES ('fig', 1), ('fig', 2)) s (sku, qty) ON t.sku = s.sku
WHEN MATCHED AND s.qty > 5 THEN DELETE;
SELECT @@ROWCOUNT AS acted;
GO
-- Constraints name the MERGE statement; the statement is undone whole.
MERGE stock t USING (VALUES ('fig', -100), ('new', 1)) s (sku, qty) ON t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty
WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, s.qty);
SELECT sku FROM stock ORDER BY sku;
GO
MERGE stock t USING (VALUES ('apple', 1)) s (sku, qty) ON t.sku = s.sku
WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, NULL);
GO
-- INSERT DEFAULT VALUES, TOP, a CTE as the source, a variable source.
CREATE TABLE events (id int IDENTITY PRIMARY KEY, at varchar(10) DEFAULT 'now');
GO
WITH src AS (SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3)
MERGE TOP (2) events t USING src ON 1 = 0
WHEN NOT MATCHED THEN INSERT DEFAULT VALUES
OUTPUT inserted.id, inserted.at;
SELECT SCOPE_IDENTITY() AS last_id;
GO
DECLARE @sku varchar(10) = 'kiwi', @qty int = 1;
MERGE stock t USING (SELECT @sku AS sku, @qty AS qty) s ON t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = s.qty
WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, s.qty);
SELECT sku, qty FROM stock WHERE sku = 'kiwi';
GO
-- Entity Framework Core's batched insert: positions carried through OUTPUT, into a
-- table variable.
CREATE TABLE blogs (id int IDENTITY(10, 5) PRIMARY KEY, name nvarchar(50) NOT NULL);
GO
DECLARE @inserted0 TABLE ([id] int, [_Position] [int]);
MERGE [blogs] USING (VALUES (N'one', 0), (N'two', 1), (N'three', 2)) AS i ([name], _Position) ON 1=0
WHEN NOT MATCHED THEN
INSERT ([name])
VALUES (i.[name])
OUTPUT INSERTED.[id], i._Position
INTO @inserted0;
SELECT [i].[id] FROM @inserted0 i ORDER BY [i].[_Position];
GO
MERGE [blogs] USING (VALUES (N'four', 0)) AS i ([name], _Position) ON 1=0
WHEN NOT MATCHED THEN INSERT ([name]) VALUES (i.[name])
OUTPUT INSERTED.[id], i._Position;
GO
-- What the clauses may see: a NOT MATCHED clause reads the source only.
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (t.sku, s.qty);
GO
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN NOT MATCHED BY SOURCE THEN UPDATE SET qty = s.qty;
GO
-- Syntax rules.
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN MATCHED THEN DELETE
GO
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN MATCHED THEN INSERT (sku) VALUES ('x');
GO
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN NOT MATCHED THEN DELETE;
GO
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN MATCHED AND s.qty > 1 THEN UPDATE SET qty = 1
WHEN MATCHED THEN UPDATE SET qty = 2;
GO
MERGE stock WITH (NOLOCK) t USING delivery s ON t.sku = s.sku WHEN MATCHED THEN DELETE;
GO
MERGE stock t USING delivery s ON t.sku = s.sku WHEN MATCHED THEN UPDATE SET nosuch = 1;
GO
MERGE stock t USING delivery s ON t.sku = s.sku WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku);
GO
SET SHOWPLAN_TEXT ON;
GO
MERGE stock t USING delivery s ON t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = s.qty WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, s.qty);
GO
SET SHOWPLAN_TEXT OFF;
GO
