-- FOR JSON PATH / AUTO and FOR XML PATH / RAW / AUTO.
CREATE TABLE people (id int PRIMARY KEY, name nvarchar(20), city nvarchar(20), born date, vip bit, score decimal(5, 2));
CREATE TABLE pets (owner int, pet nvarchar(10));
INSERT INTO people VALUES (1, N'Ann', N'Oslo', '1990-05-01', 1, 9.50), (2, N'Bo "B"', NULL, '1985-12-31', 0, NULL);
INSERT INTO pets VALUES (1, N'cat'), (1, N'dog');
GO
SELECT id, name, city AS [address.city], born, vip, score FROM people ORDER BY id FOR JSON PATH;
SELECT id, name, city FROM people ORDER BY id FOR JSON PATH, INCLUDE_NULL_VALUES;
SELECT id, name FROM people WHERE id = 1 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER;
SELECT id, name FROM people ORDER BY id FOR JSON AUTO, ROOT('people');
SELECT id FROM people WHERE id = 99 FOR JSON PATH;
GO
-- Nested: a FOR JSON subquery is embedded as JSON, not as a string.
SELECT p.id, p.name,
       (SELECT pet FROM pets WHERE owner = p.id FOR JSON PATH) AS pets,
       JSON_QUERY(N'{"x":1}') AS extra
FROM people p ORDER BY p.id FOR JSON PATH;
DECLARE @j nvarchar(max) = (SELECT id, name FROM people ORDER BY id FOR JSON PATH);
SELECT CAST(JSON_VALUE(@j, '$[1].name') AS nvarchar(10)) AS second_name;
GO
SELECT id, name FROM people ORDER BY id FOR XML PATH;
SELECT id AS [@id], name, city FROM people ORDER BY id FOR XML PATH('person'), ROOT('people');
SELECT id, name FROM people ORDER BY id FOR XML RAW;
SELECT id, name FROM people ORDER BY id FOR XML RAW('p'), ELEMENTS;
SELECT id, name FROM people ORDER BY id FOR XML AUTO;
GO
-- The string-concatenation idiom.
SELECT STUFF((SELECT ', ' + pet FROM pets ORDER BY pet FOR XML PATH('')), 1, 2, '') AS pet_list;
SELECT STUFF((SELECT ',' + name FROM people ORDER BY id FOR XML PATH('')), 1, 1, '') AS escaped;
SELECT STUFF((SELECT N',' + name + N' <' + CAST(id AS nvarchar(5)) + N'>' FROM people ORDER BY id
              FOR XML PATH(''), TYPE).value('.', 'NVARCHAR(MAX)'), 1, 1, '') AS typed_text;
SELECT (SELECT pet + ';' FROM pets ORDER BY pet FOR XML PATH(''), TYPE).value('(./text())[1]', 'varchar(50)') AS pets;
SELECT p.id, STUFF((SELECT ',' + pet FROM pets WHERE owner = p.id ORDER BY pet FOR XML PATH('')), 1, 1, '') AS per_owner
FROM people p ORDER BY p.id;
GO
SELECT 1 + 1 FOR JSON PATH;
GO
-- value() reads one node (2389 for a path that may find several): an element's text, an
-- attribute, the n-th of several, a descendant.
SELECT (SELECT 1 AS a FOR XML PATH(''), TYPE).value('/a', 'int');
GO
SELECT (SELECT 1 AS a FOR XML PATH(''), TYPE).value('(/a)[1]', 'int') AS a,
       (SELECT id AS '@id', name FROM people ORDER BY id FOR XML PATH('person'), ROOT('people'), TYPE)
           .value('(/people/person/@id)[2]', 'int') AS second_id,
       (SELECT id AS '@id', name FROM people ORDER BY id FOR XML PATH('person'), ROOT('people'), TYPE)
           .value('(//name)[2]', 'varchar(20)') AS second_name,
       (SELECT id AS '@id', name FROM people ORDER BY id FOR XML PATH('person'), ROOT('people'), TYPE)
           .value('/people[1]/person[1]/name[1]', 'varchar(20)') AS first_name,
       (SELECT id FROM people ORDER BY id FOR XML PATH(''), TYPE).value('(/nothing)[1]', 'int') AS missing;
GO
SELECT (SELECT 1 AS a FOR XML PATH(''), TYPE).value('count(/a)', 'int');
GO
