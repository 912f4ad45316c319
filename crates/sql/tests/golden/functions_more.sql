-- GENERATE_SERIES, HASHBYTES, BINARY_CHECKSUM.
SELECT value FROM GENERATE_SERIES(1, 5);
SELECT value FROM GENERATE_SERIES(10, 1, -4);
SELECT value FROM GENERATE_SERIES(0.5, 1.5, 0.25);
SELECT COUNT(*) AS none FROM GENERATE_SERIES(5, 1, 1);
SELECT d.value AS day_offset, DATEADD(day, d.value, '2026-01-30') AS day
FROM GENERATE_SERIES(0, 2) AS d ORDER BY d.value;
GO
SELECT CAST(HASHBYTES('SHA2_256', 'abc') AS varbinary(32)) AS sha256;
SELECT CAST(HASHBYTES('MD5', 'abc') AS varbinary(16)) AS md5, CAST(HASHBYTES('SHA1', N'abc') AS varbinary(20)) AS sha1_unicode,
       CAST(HASHBYTES('NOPE', 'abc') AS varbinary(4)) AS unknown, CAST(HASHBYTES('MD5', NULL) AS varbinary(4)) AS nul,
       DATALENGTH(HASHBYTES('SHA2_512', 'abc')) AS sha512_bytes;
SELECT CASE WHEN BINARY_CHECKSUM('abc') = BINARY_CHECKSUM('ABC') THEN 'same' ELSE 'differ' END AS binary_case,
       CASE WHEN CHECKSUM('abc') = CHECKSUM('ABC') THEN 'same' ELSE 'differ' END AS checksum_case;
GO
SELECT value FROM GENERATE_SERIES(1, 10, 0);
GO
SELECT value FROM GENERATE_SERIES(1, 100000000);
GO
SELECT value FROM GENERATE_SERIES('a', 'b');
GO
-- DATE_BUCKET: the start of the bucket that holds a date.
DECLARE @d datetime2(0) = '2026-11-30 14:37:21';
SELECT DATE_BUCKET(week, 1, @d) AS week, DATE_BUCKET(day, 10, @d) AS ten_days, DATE_BUCKET(hour, 6, @d) AS six_hours,
       DATE_BUCKET(minute, 15, @d) AS quarter_hour;
SELECT DATE_BUCKET(month, 1, CAST('2026-11-30' AS date)) AS month, DATE_BUCKET(quarter, 1, CAST('2026-11-30' AS date)) AS quarter,
       DATE_BUCKET(year, 5, CAST('2026-11-30' AS date)) AS five_years,
       DATE_BUCKET(month, 2, CAST('2026-11-30' AS date), CAST('2026-01-15' AS date)) AS from_origin;
SELECT DATE_BUCKET(day, 1, CAST(NULL AS date)) AS nul;
GO
SELECT DATE_BUCKET(day, 0, SYSDATETIME());
GO
