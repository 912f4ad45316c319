-- CONVERT styles 130 and 131: the Hijri calendar (SQL Server's Kuwaiti algorithm), out
-- and back in, from datetime, datetime2, date and datetimeoffset; a day before the
-- calendar began has no Hijri date (281).
DECLARE @d datetime = '2000-08-07 12:14:35.727';
SELECT CONVERT(nvarchar(40), @d, 131) AS style_131, CONVERT(nvarchar(40), @d, 130) AS style_130;
SELECT CONVERT(datetime, N' 7/05/1421 12:14:35:727PM', 131) AS back_131,
       CONVERT(datetime, CONVERT(nvarchar(40), @d, 130), 130) AS back_130,
       CONVERT(date, N'16/10/1440', 131) AS date_only;
GO
SELECT CONVERT(nvarchar(40), CAST('2019-06-19 09:05:00' AS datetime2(3)), 131) AS datetime2_,
       CONVERT(nvarchar(40), CAST('2026-11-30' AS date), 131) AS date_,
       CONVERT(nvarchar(40), CAST('0622-07-18' AS date), 130) AS first_day;
GO
-- The months' names and lengths over one year (1447 AH).
SELECT n, CONVERT(nvarchar(40), DATEADD(day, n * 30, CAST('2025-06-26' AS datetime)), 130) AS hijri
FROM (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11)) v(n) ORDER BY n;
GO
SELECT CONVERT(nvarchar(40), CAST('0622-07-17' AS date), 131);
GO
SELECT CONVERT(datetime, N'30/02/1421', 131);
GO
