-- PARSE and TRY_PARSE: numbers and dates read as .NET reads them in en-US (the default)
-- and the invariant culture; 9819 when the text does not read (TRY_PARSE: NULL); 9818
-- for a culture not supported; 8116 for an argument that is not text.
SELECT PARSE('1,234' AS int) AS grouped_int, PARSE(' -42 ' AS int) AS spaced, PARSE('42-' AS int) AS trailing_sign,
       PARSE('12.00' AS int) AS zero_fraction, PARSE('1,234.5678' AS decimal(10, 2)) AS dec,
       PARSE('$1,234.50' AS money) AS money_sym, PARSE('($12.50)' AS money USING 'en-US') AS money_neg,
       PARSE('1.5E3' AS float) AS float_exp;
SELECT PARSE('Monday, 13 December 2010' AS datetime2) AS long_date, PARSE('December 13, 2010 2:30 PM' AS datetime) AS us_date,
       PARSE('12/13/2010' AS date) AS mdy, PARSE('2010-12-13T14:30:00' AS datetime2(0)) AS iso,
       PARSE('13 Dec 2010 14:30 +05:30' AS datetimeoffset(0)) AS with_offset, PARSE('2:30:15 PM' AS time(0)) AS time_only;
SELECT TRY_PARSE('FIFTY' AS int) AS not_a_number, TRY_PARSE('12.5' AS int) AS fraction_for_int,
       TRY_PARSE('Friday, 25 June 2015' AS date) AS wrong_day, TRY_PARSE('Thursday, 25 June 2015' AS date) AS right_day,
       TRY_PARSE('1,5' AS float) AS groups_in_float, TRY_PARSE('99999999999' AS int) AS too_big,
       TRY_PARSE(CAST(NULL AS varchar(5)) AS int) AS null_text, TRY_PARSE('7' AS int USING '') AS invariant;
GO
SELECT PARSE('ABC' AS int);
GO
SELECT PARSE('123456' AS decimal(3, 0));
GO
SELECT PARSE('1' AS int USING 'de-DE');
GO
SELECT PARSE(12 AS int);
GO
