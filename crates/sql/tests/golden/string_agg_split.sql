-- STRING_AGG (WITHIN GROUP), STRING_SPLIT (with ordinal, under CROSS APPLY), GREATEST,
-- LEAST and TRANSLATE.
CREATE TABLE tags (post int, tag nvarchar(20), weight int);
INSERT INTO tags VALUES (1, N'rust', 3), (1, N'sql', 1), (1, N'db', 2), (2, N'go', 1), (3, NULL, 1);
GO
-- (Narrowed with CAST: the result is nvarchar(4000) or varchar(8000), which sqlcmd pads.)
SELECT post, LEN(STRING_AGG(tag, N', ')) AS length_any_order, COUNT(*) AS n FROM tags GROUP BY post ORDER BY post;
SELECT post, CAST(STRING_AGG(tag, N', ') WITHIN GROUP (ORDER BY tag) AS nvarchar(30)) AS by_name,
       CAST(STRING_AGG(tag, '|') WITHIN GROUP (ORDER BY weight DESC) AS nvarchar(30)) AS by_weight
FROM tags GROUP BY post ORDER BY post;
SELECT CAST(STRING_AGG(CAST(weight AS varchar(5)), '+') WITHIN GROUP (ORDER BY weight) AS varchar(20)) AS sum_text FROM tags;
SELECT CAST(STRING_AGG(tag, ',') AS nvarchar(10)) AS none FROM tags WHERE post = 99;
GO
-- The FOR XML PATH idiom's replacement, and a (max) result.
SELECT LEN(STRING_AGG(CAST(REPLICATE('x', 5000) AS varchar(max)), ',')) AS long_len FROM tags;
GO
SELECT LEN(STRING_AGG(CAST(REPLICATE('x', 5000) AS varchar(8000)), ',')) FROM tags;
GO
SELECT value FROM STRING_SPLIT('a,b,,c', ',');
SELECT value, ordinal FROM STRING_SPLIT(N'x y z', N' ', 1) ORDER BY ordinal DESC;
SELECT COUNT(*) AS parts FROM STRING_SPLIT(NULL, ',');
GO
CREATE TABLE posts (id int PRIMARY KEY, tag_list varchar(100));
INSERT INTO posts VALUES (1, 'rust,sql'), (2, 'go'), (3, '');
SELECT p.id, s.value FROM posts p CROSS APPLY STRING_SPLIT(p.tag_list, ',') AS s ORDER BY p.id, s.value;
SELECT s.value AS tag, COUNT(*) AS uses FROM posts p CROSS APPLY STRING_SPLIT(p.tag_list, ',') s WHERE s.value <> '' GROUP BY s.value ORDER BY tag;
GO
SELECT GREATEST(1, 5, 3) AS g, LEAST(1, 5, 3) AS l, GREATEST(2, NULL, 1.5) AS g_dec, LEAST('b', 'a', 'c') AS l_str,
       GREATEST(NULL, NULL) AS all_null, GREATEST(CAST('2026-01-02' AS date), CAST('2025-12-31' AS date)) AS g_date;
SELECT TRANSLATE('2*[3+4]/{7-2}', '[]{}', '()()') AS translated;
GO
-- Errors.
SELECT value FROM STRING_SPLIT('a,b', ',,');
GO
SELECT value FROM STRING_SPLIT('a,b', ',', 2);
GO
SELECT TRANSLATE('abc', 'ab', 'x');
GO
SELECT SUM(weight) WITHIN GROUP (ORDER BY weight) FROM tags;
GO
SELECT STRING_AGG(tag, ',') OVER () FROM tags;
GO
SELECT STRING_AGG(tag) FROM tags;
GO
