-- Index seeks must return exactly what scans return: clustered, nonclustered, composite,
-- descending keys, range predicates, NULLs in indexed columns.
CREATE TABLE k (id int PRIMARY KEY, a int, b varchar(10), c int);
CREATE INDEX ix_a ON k (a);
CREATE INDEX ix_bc ON k (b, c DESC);
CREATE TABLE d (x int NOT NULL, y int NOT NULL, z varchar(5), CONSTRAINT pk_d PRIMARY KEY (x DESC, y));
CREATE INDEX ix_z ON d (z);
CREATE TABLE dn (v int NULL, w int NULL);
CREATE INDEX ix_v_desc ON dn (v DESC);
CREATE INDEX ix_w_v ON dn (w, v);
INSERT INTO dn VALUES (1, 1), (NULL, 1), (3, 1), (NULL, NULL), (2, NULL), (5, 1);
GO
SET NOCOUNT ON;
DECLARE @i int = 1;
WHILE @i <= 40
BEGIN
  INSERT INTO k VALUES (@i, CASE WHEN @i % 7 = 0 THEN NULL ELSE @i % 5 END, CASE WHEN @i % 9 = 0 THEN NULL ELSE CHAR(97 + @i % 4) END, @i % 6);
  INSERT INTO d VALUES (@i % 4, @i, CASE WHEN @i % 10 = 0 THEN NULL ELSE 'z' + CAST(@i AS varchar(3)) END);
  SET @i = @i + 1;
END;
SET NOCOUNT OFF;
GO
-- clustered key: point, ranges, IN, open ranges
SELECT id, a FROM k WHERE id = 17;
SELECT id FROM k WHERE id > 37 ORDER BY id;
SELECT id FROM k WHERE id >= 38 ORDER BY id DESC;
SELECT id FROM k WHERE id < 3 ORDER BY id;
SELECT id FROM k WHERE id BETWEEN 10 AND 13 ORDER BY id;
SELECT id FROM k WHERE id > 10 AND id <= 12 ORDER BY id;
SELECT id FROM k WHERE id IN (5, 1, 40, 99) ORDER BY id;
SELECT id FROM k WHERE id = 0;
SELECT id FROM k WHERE id > 40;
SELECT id FROM k WHERE id = NULL;
SELECT id FROM k WHERE 17 = id;
SELECT id FROM k WHERE id = 17.0;
SELECT id FROM k WHERE id = '17';
SELECT id FROM k WHERE id < 2.5 ORDER BY id;
GO
-- nonclustered on a nullable column
SELECT COUNT(*) AS n FROM k WHERE a = 1;
SELECT id FROM k WHERE a = 1 ORDER BY id;
SELECT COUNT(*) AS n FROM k WHERE a IS NULL;
SELECT id FROM k WHERE a IS NULL ORDER BY id;
SELECT COUNT(*) AS n FROM k WHERE a < 2;
SELECT COUNT(*) AS n FROM k WHERE a >= 3;
SELECT COUNT(*) AS n FROM k WHERE a <> 0;
SELECT COUNT(*) AS scan_n FROM k WHERE a + 0 < 2;
SELECT a, COUNT(*) AS n FROM k GROUP BY a ORDER BY a;
GO
-- composite nonclustered (b, c DESC)
SELECT id, b, c FROM k WHERE b = 'b' AND c = 5 ORDER BY id;
SELECT id, c FROM k WHERE b = 'c' AND c > 3 ORDER BY id;
SELECT id, c FROM k WHERE b = 'c' AND c BETWEEN 1 AND 2 ORDER BY id;
SELECT COUNT(*) AS n FROM k WHERE b = 'a';
SELECT COUNT(*) AS n FROM k WHERE b = 'A';
SELECT COUNT(*) AS n FROM k WHERE b IS NULL;
SELECT COUNT(*) AS n FROM k WHERE b IS NULL AND c = 0;
SELECT COUNT(*) AS n FROM k WHERE b > 'b';
SELECT COUNT(*) AS n FROM k WHERE c = 2;
SELECT b, MIN(c) AS mn, MAX(c) AS mx, COUNT(*) AS n FROM k GROUP BY b ORDER BY b;
GO
-- descending clustered composite key (x DESC, y)
SELECT x, y FROM d WHERE x = 2 AND y < 15 ORDER BY y;
SELECT COUNT(*) AS n FROM d WHERE x = 3;
SELECT COUNT(*) AS n FROM d WHERE x > 1;
SELECT COUNT(*) AS n FROM d WHERE x <= 1;
SELECT x, y FROM d WHERE x >= 2 AND y BETWEEN 5 AND 8 ORDER BY x, y;
SELECT x, y FROM d WHERE y = 21;
SELECT TOP 3 x, y FROM d ORDER BY x DESC, y;
GO
-- one-sided ranges never include NULLs (ascending and descending keys, after a prefix)
SELECT v FROM dn WHERE v < 3 ORDER BY v;
SELECT v FROM dn WHERE v > 1 ORDER BY v;
SELECT v FROM dn WHERE v <= 2 ORDER BY v DESC;
SELECT v FROM dn WHERE w = 1 AND v < 4 ORDER BY v;
SELECT v FROM dn WHERE w = 1 AND v >= 3 ORDER BY v;
SELECT COUNT(*) AS n FROM dn WHERE w < 2;
SELECT COUNT(*) AS n FROM dn WHERE w IS NULL AND v > 0;
GO
-- nonclustered with NULLs
SELECT x, y FROM d WHERE z = 'z13';
SELECT x, y FROM d WHERE z = 'Z13';
SELECT COUNT(*) AS n FROM d WHERE z IS NULL;
SELECT COUNT(*) AS n FROM d WHERE z > 'z3';
GO
-- seeks driven by joins
SELECT k.id, d.y FROM k JOIN d ON d.y = k.id WHERE k.id < 4 ORDER BY k.id;
SELECT COUNT(*) AS n FROM k JOIN d ON d.z = 'z' + CAST(k.id AS varchar(3));
SELECT COUNT(*) AS n FROM k JOIN k k2 ON k2.a = k.a;
SELECT COUNT(*) AS n FROM k LEFT JOIN k k2 ON k2.a = k.a;
SELECT COUNT(*) AS n FROM d JOIN k ON k.b = 'a' AND k.c = d.x;
GO
-- the same queries after updates and deletes keep indexes consistent
UPDATE k SET a = 9 WHERE id <= 5;
DELETE FROM k WHERE id > 35;
SELECT COUNT(*) AS n FROM k WHERE a = 9;
SELECT id FROM k WHERE a = 9 ORDER BY id;
SELECT COUNT(*) AS n FROM k WHERE a = 1;
SELECT COUNT(*) AS n FROM k WHERE id > 30;
GO
