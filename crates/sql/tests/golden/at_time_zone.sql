-- AT TIME ZONE with Windows zone names: a local time given its zone's offset (daylight
-- time or not, a spring-forward gap moved forward, a fall-back overlap taking the
-- daylight offset), a datetimeoffset's instant shown in another zone, chains, any case,
-- 9820 for a zone not known, 8116 for a date.
SELECT CAST('2024-01-15 09:30:00' AS datetime2(0)) AT TIME ZONE 'Pacific Standard Time' AS winter,
       CAST('2024-07-15 09:30:00' AS datetime2(0)) AT TIME ZONE 'Pacific Standard Time' AS summer,
       CAST('2024-03-10 02:30:00' AS datetime2(0)) AT TIME ZONE 'Pacific Standard Time' AS in_the_gap,
       CAST('2024-11-03 01:30:00' AS datetime2(0)) AT TIME ZONE 'Pacific Standard Time' AS in_the_overlap;
SELECT CAST('2024-07-15 16:30:00 +00:00' AS datetimeoffset(0)) AT TIME ZONE 'W. Europe Standard Time' AS berlin,
       CAST('2024-07-15 16:30:00 +00:00' AS datetimeoffset(0)) AT TIME ZONE 'india standard time' AS lower_case,
       CAST('2024-07-15 16:30:00 +00:00' AS datetimeoffset(0)) AT TIME ZONE 'Tokyo Standard Time' AS tokyo,
       CAST('2024-07-15 09:30:00' AS datetime) AT TIME ZONE 'UTC' AT TIME ZONE 'Eastern Standard Time' AS chained;
DECLARE @zone sysname = N'AUS Eastern Standard Time';
SELECT CAST('2024-01-01 00:00:00' AS smalldatetime) AT TIME ZONE @zone AS sydney_summer,
       CAST(NULL AS datetime2) AT TIME ZONE @zone AS null_value;
GO
SELECT CAST('2024-01-01' AS datetime2) AT TIME ZONE 'Mars Standard Time';
GO
SELECT CAST('2024-01-01' AS date) AT TIME ZONE 'UTC';
GO
