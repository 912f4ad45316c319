-- JSON in T-SQL: ISJSON, JSON_VALUE, JSON_QUERY, JSON_MODIFY and OPENJSON.
DECLARE @doc nvarchar(max) = N'{"id": 7, "name": "Ann \"A\" Lee", "active": true, "score": 9.5,
  "tags": ["x", "y"], "address": {"city": "Oslo", "zip": null}, "key with space": 1}';
SELECT ISJSON(@doc) AS is_json, ISJSON(N'[1,2]') AS arr, ISJSON(N'7') AS scalar, ISJSON(N'{bad') AS bad, ISJSON(NULL) AS nul;
-- (Narrowed with CAST: the results are nvarchar(4000) and nvarchar(max).)
SELECT CAST(JSON_VALUE(@doc, '$.id') AS nvarchar(5)) AS id, CAST(JSON_VALUE(@doc, '$.name') AS nvarchar(12)) AS name,
       CAST(JSON_VALUE(@doc, '$.active') AS nvarchar(5)) AS active, CAST(JSON_VALUE(@doc, '$.score') AS nvarchar(5)) AS score,
       CAST(JSON_VALUE(@doc, '$.tags[1]') AS nvarchar(5)) AS tag1, CAST(JSON_VALUE(@doc, '$.address.city') AS nvarchar(5)) AS city,
       CAST(JSON_VALUE(@doc, '$.address.zip') AS nvarchar(5)) AS zip, CAST(JSON_VALUE(@doc, '$."key with space"') AS nvarchar(5)) AS spaced,
       CAST(JSON_VALUE(@doc, '$.tags') AS nvarchar(5)) AS not_scalar, CAST(JSON_VALUE(@doc, '$.missing') AS nvarchar(5)) AS missing;
SELECT CAST(JSON_QUERY(@doc, '$.tags') AS nvarchar(12)) AS tags, CAST(JSON_QUERY(@doc, '$.address') AS nvarchar(30)) AS address,
       CAST(JSON_QUERY(@doc, '$.id') AS nvarchar(5)) AS scalar_is_null;
SELECT CAST(JSON_MODIFY(@doc, '$.name', N'Bo') AS nvarchar(120)) AS renamed;
SELECT CAST(JSON_MODIFY(JSON_MODIFY(N'{"a":1,"b":[1]}', '$.a', NULL), 'append $.b', 2) AS nvarchar(20)) AS modified;
SELECT CAST(JSON_MODIFY(N'{"a":1}', '$.c', 3) AS nvarchar(20)) AS added,
       CAST(JSON_MODIFY(N'{"a":1}', '$.a', CAST(1 AS bit)) AS nvarchar(20)) AS to_bool;
GO
SELECT CAST([key] AS nvarchar(5)) AS [key], CAST(value AS nvarchar(12)) AS value, type
FROM OPENJSON(N'{"a": 1, "b": "two", "c": [1,2], "d": {"e": null}, "f": false, "g": null}');
SELECT CAST([key] AS nvarchar(5)) AS [key], CAST(value AS nvarchar(5)) AS value, type FROM OPENJSON(N'{"items": [10, 20, 30]}', '$.items');
SELECT COUNT(*) AS none FROM OPENJSON(N'{"a": 1}', '$.missing');
GO
-- JSON stored in a column, read per row.
CREATE TABLE events (id int PRIMARY KEY, payload nvarchar(max) CHECK (ISJSON(payload) = 1));
INSERT INTO events VALUES (1, N'{"kind": "click", "tags": ["a", "b"]}'), (2, N'{"kind": "view", "tags": []}');
SELECT id, CAST(JSON_VALUE(payload, '$.kind') AS nvarchar(10)) AS kind FROM events WHERE JSON_VALUE(payload, '$.kind') = 'click';
SELECT e.id, CAST(t.value AS nvarchar(5)) AS tag FROM events e CROSS APPLY OPENJSON(e.payload, '$.tags') AS t ORDER BY e.id, t.[key];
GO
INSERT INTO events VALUES (3, N'not json');
GO
-- Errors.
SELECT CAST(JSON_VALUE(N'{"a":1}', 'strict $.b') AS nvarchar(5));
GO
SELECT CAST(JSON_VALUE(N'{"a":[1]}', 'strict $.a') AS nvarchar(5));
GO
SELECT CAST(JSON_QUERY(N'{"a":1}', 'strict $.a') AS nvarchar(5));
GO
SELECT CAST(JSON_VALUE(N'{"a":1', '$.a') AS nvarchar(5));
GO
SELECT CAST(JSON_VALUE(N'{"a":1}', 'a') AS nvarchar(5));
GO
SELECT type FROM OPENJSON(N'{"a":1}', 'strict $.a');
GO
-- OPENJSON … WITH: typed columns read at their paths.
DECLARE @orders nvarchar(max) = N'[
  {"id": 1, "customer": {"name": "Ann"}, "total": 12.50, "paid": true, "at": "2026-03-01T10:00:00", "lines": [1, 2]},
  {"id": 2, "customer": {"name": "Bo"}, "total": 3, "paid": false, "at": "2026-03-02T11:30:00", "lines": []}]';
SELECT id, name, total, paid, at, CAST(lines AS nvarchar(10)) AS lines
FROM OPENJSON(@orders) WITH (id int, name nvarchar(20) '$.customer.name', total decimal(9, 2), paid bit,
                             at datetime2(0), lines nvarchar(max) AS JSON) AS o
ORDER BY id;
SELECT o.id FROM OPENJSON(@orders) WITH (id int, total decimal(9, 2)) o WHERE o.total > 5;
SELECT x.a, x.b FROM OPENJSON(N'{"a": 5, "b": "five"}') WITH (a int, b nvarchar(10)) x;
GO
-- A procedure taking a JSON parameter, the way applications pass lists.
CREATE PROCEDURE add_events @json nvarchar(max) AS
    INSERT INTO events (id, payload)
    SELECT id, payload FROM OPENJSON(@json) WITH (id int, payload nvarchar(max) AS JSON);
GO
EXEC add_events N'[{"id": 10, "payload": {"kind": "a"}}, {"id": 11, "payload": {"kind": "b"}}]';
SELECT id, CAST(JSON_VALUE(payload, '$.kind') AS nvarchar(5)) AS kind FROM events WHERE id >= 10 ORDER BY id;
GO
