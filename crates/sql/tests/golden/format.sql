-- FORMAT: .NET's standard and custom numeric formats, standard and custom date and
-- time formats, TimeSpan formats for time, the en-US and invariant cultures, NULL for a
-- format .NET refuses, 9818 for a culture not supported, 8116 for a type it cannot take.
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('n', FORMAT(1234.5678, 'N')),
    ('n0', FORMAT(1234.5678, 'N0')),
    ('n3', FORMAT(-1234.5, 'N3')),
    ('c', FORMAT(1234.5678, 'C')),
    ('c3', FORMAT(-123.456, 'C3')),
    ('c_iv', FORMAT(12.34, 'C', 'iv')),
    ('p', FORMAT(0.375, 'P')),
    ('p0', FORMAT(1, 'P0')),
    ('f1', FORMAT(1234.5678, 'F1'))
) AS t (k, v);
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('d', FORMAT(123, 'D')),
    ('d6', FORMAT(-1234, 'D6')),
    ('d_of_decimal', FORMAT(1.23, 'D')),
    ('x', FORMAT(255, 'X')),
    ('x4', FORMAT(255, 'x4')),
    ('x_neg', FORMAT(-1, 'X')),
    ('e', FORMAT(1234.5678, 'E')),
    ('e2', FORMAT(-0.00012345, 'e2')),
    ('g', FORMAT(1234.5678, 'G')),
    ('g_float', FORMAT(CAST(1.5 AS float), 'G')),
    ('g3', FORMAT(123456789, 'G3'))
) AS t (k, v);
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('grouped', FORMAT(1234567.891, '#,##0.00')),
    ('padded', FORMAT(0.5, '0.000')),
    ('zeros', FORMAT(42, '00000')),
    ('hashes', FORMAT(3.14159, '#.##')),
    ('zero_hashes', FORMAT(0, '#.##')),
    ('pct', FORMAT(0.256, '0.0%')),
    ('scaled', FORMAT(1234567, '#,##0,K')),
    ('sections', FORMAT(-5, '0;(0);zero')),
    ('zero_section', FORMAT(0, '0;(0);zero')),
    ('sci', FORMAT(12345.678, '0.00E+00')),
    ('literals', FORMAT(42, '\#0 ''units''')),
    ('not_a_format', FORMAT(7, 'Z'))
) AS t (k, v);
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('money_c', FORMAT(CAST(12345.6789 AS money), 'C')),
    ('big_float', FORMAT(CAST(1e10 AS float), 'N0')),
    ('real_f3', FORMAT(CAST(0.1 AS real), 'F3')),
    ('rounds_to_zero', FORMAT(CAST(-0.004 AS decimal(5,3)), 'N2'))
) AS t (k, v);
GO
DECLARE @d datetime2(3) = '2024-03-09T14:05:07.250';
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('d', FORMAT(@d, 'd')),
    ('long_d', FORMAT(@d, 'D')),
    ('g', FORMAT(@d, 'g')),
    ('long_g', FORMAT(@d, 'G')),
    ('t', FORMAT(@d, 't')),
    ('long_t', FORMAT(@d, 'T')),
    ('m', FORMAT(@d, 'M')),
    ('y', FORMAT(@d, 'Y')),
    ('s', FORMAT(@d, 's')),
    ('u', FORMAT(@d, 'u')),
    ('o', FORMAT(@d, 'o')),
    ('r', FORMAT(@d, 'R'))
) AS t (k, v);
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('iso', FORMAT(@d, 'yyyy-MM-dd')),
    ('dmy', FORMAT(@d, 'dd/MM/yyyy HH:mm:ss.fff')),
    ('short_names', FORMAT(@d, 'ddd, MMM d yy h:mm tt')),
    ('long_names', FORMAT(@d, 'dddd d MMMM yyyy')),
    ('trimmed', FORMAT(@d, 'HH:mm:ss.FFF')),
    ('no_fraction', FORMAT(CAST('2024-03-09T00:00:00' AS datetime2), 'HH:mm:ss.FFF')),
    ('quoted', FORMAT(@d, '''Day'' d ''of'' MMMM')),
    ('d_iv', FORMAT(@d, 'd', 'iv')),
    ('long_d_iv', FORMAT(@d, 'D', 'iv'))
) AS t (k, v);
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('date_only', FORMAT(CAST('2024-03-09' AS date), 'MMMM yyyy')),
    ('with_offset', FORMAT(CAST('2024-03-09T23:15:00+05:30' AS datetimeoffset), 'yyyy-MM-dd HH:mm zzz')),
    ('dto_roundtrip', FORMAT(CAST('2024-03-09T23:15:00+05:30' AS datetimeoffset), 'o')),
    ('time_escaped', FORMAT(CAST('14:05:07.25' AS time), 'hh\:mm\:ss')),
    ('time_unescaped', FORMAT(CAST('14:05:07' AS time), 'hh:mm')),
    ('time_c', FORMAT(CAST('14:05:07' AS time), 'c')),
    ('time_g', FORMAT(CAST('04:05:07' AS time), 'g'))
) AS t (k, v);
GO
SELECT k AS [case], CAST(v AS nvarchar(44)) AS formatted FROM (VALUES
    ('null_value', FORMAT(NULL, 'N')),
    ('null_format', FORMAT(1, NULL)),
    ('null_culture', FORMAT(1, 'N', NULL))
) AS t (k, v);
SELECT CAST(FORMAT(1, 'N', 'de-DE') AS nvarchar(10)) AS german;
GO
SELECT FORMAT('text', 'N');
GO
