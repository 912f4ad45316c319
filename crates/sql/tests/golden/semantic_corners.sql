-- The semantic corners: the result types (and nullability) of ISNULL, COALESCE, CASE,
-- arithmetic, FLOOR and CEILING as SQL Server documents them; ISNULL cutting its second
-- argument to the first's length; integer literals next to decimals typed by their
-- digits, other integer constants as int; which statements set @@ROWCOUNT; money
-- literals.
SET NOCOUNT ON;
CREATE TABLE t (i int, d decimal(5,2), v varchar(3), m money NOT NULL);
SELECT CAST(name AS varchar(16)) AS name, CAST(system_type_name AS varchar(20)) AS type, is_nullable
FROM sys.dm_exec_describe_first_result_set(N'SELECT
    ISNULL(CAST(1 AS smallint), 2.5) AS isnull_smallint, ISNULL(v, ''abcdef'') AS isnull_vc3, ISNULL(i, 0) AS isnull_nn,
    COALESCE(CAST(1 AS smallint), 2.5) AS coalesce_dec, COALESCE(i, d) AS coalesce_mixed,
    CASE WHEN i = 1 THEN 1 ELSE 2.5 END AS case_dec, CASE WHEN i = 1 THEN ''a'' ELSE N''bb'' END AS case_nv,
    CAST(1 AS tinyint) + CAST(1 AS tinyint) AS tiny_plus, CAST(1 AS smallint) * CAST(2 AS tinyint) AS small_times,
    i + CAST(1 AS bigint) AS int_bigint, i / d AS int_div_dec, CAST(1 AS int) / d AS cast_div_dec, 1 / d AS lit_div_dec,
    d * CAST(2 AS decimal(5,3)) AS dec_mul, d + 1 AS dec_plus_lit, m * 2 AS money_int, m / m AS money_div,
    CAST(1 AS real) + 1 AS real_int, CAST(1 AS float) + d AS float_dec,
    FLOOR(d) AS floor_dec, CEILING(CAST(1.5 AS float)) AS ceil_float, FLOOR(CAST(7 AS smallint)) AS floor_small,
    FLOOR(m) AS floor_money, CEILING(1.25) AS ceil_literal, 10 % 3 AS modulo, CAST(10 AS decimal(5,1)) % 3 AS dec_mod
FROM t', NULL, 0);
SELECT ISNULL(CAST(NULL AS varchar(3)), 'abcdef') AS cut, ISNULL(NULL, 'abcdef') AS null_literal_first,
       1.0 / 3 AS literal_division, CAST(1 AS int) / 3.0 AS int_division;
GO
-- @@ROWCOUNT: reset to 0 by PRINT, SET options, BEGIN TRANSACTION, COMMIT, USE; 1 after
-- an assignment; a SELECT's row count otherwise.
DECLARE @r int;
SELECT 1 UNION SELECT 2;
PRINT 'print'; SELECT @@ROWCOUNT AS after_print;
SELECT 1 UNION SELECT 2;
SET ANSI_NULLS ON; SELECT @@ROWCOUNT AS after_set_option;
SELECT 1 UNION SELECT 2;
BEGIN TRANSACTION; SELECT @@ROWCOUNT AS after_begin_tran;
SELECT 1 UNION SELECT 2;
COMMIT; SELECT @@ROWCOUNT AS after_commit;
SELECT 1 UNION SELECT 2;
SET @r = 5; SELECT @@ROWCOUNT AS after_assignment;
SELECT 1 UNION SELECT 2 UNION SELECT 3;
SELECT @@ROWCOUNT AS after_three_rows;
GO
-- Money literals: currency signs, a sign before them, a point alone, a sign alone (0).
SELECT $12.34 AS dollars, -$45.56 AS negative, +$423456.99 AS positive, £3 AS pounds, ¥100 AS yen, €2.5 AS euros,
       $.5 AS half, $ AS bare, $-5 AS bare_minus_five;
GO
