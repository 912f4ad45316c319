-- Types, conversions, operators and built-in functions.
select 1 + 2 * 3 as precedence, 7 / 2 as int_div, 7 % 3 as modulo, 7 / 2.0 as dec_div, -7 / 2 as neg_div;
select 2147483647 + 0 as max_int, 2147483648 as numeric_literal, 1.50 as dec_literal, 1e3 as float_literal, $12.5 as money_literal;
select cast(1 as tinyint) + cast(1 as smallint) as widen, 10 & 6 as band, 10 | 6 as bor, 10 ^ 6 as bxor, ~0 as bnot;
select 1.1 + 2.25 as dec_add, 1.5 * 2.25 as dec_mul, 10.0 / 3 as dec_div3, cast(10 as float) / 3 as float_div;
select 'abc' + 'def' as concat, N'uni' + 'code' as mixed, 'x' + cast(5 as varchar(5)) as num_text;
go
select 2147483647 + 1;
go
select cast(300 as tinyint);
go
select 5 / 0;
go
select 5 % 0;
go
select cast('12' as int) + 1 as from_text, '5' + 1 as implicit, cast(' 42 ' as int) as spaces;
go
select 'abc' + 1;
go
select cast('1.5' as int);
go
select cast('2024-02-30' as date);
go
select cast(3.999 as int) as trunc, cast(3.5 as decimal(5,0)) as round_half, cast(-2.5 as decimal(5,0)) as round_neg, round(123.456, 2) as r2, round(123.456, -1) as rm1, round(123.456, 1, 1) as trunc1;
select cast(123.456 as decimal(4,1)) as fits;
go
select cast(123.456 as decimal(3,1));
go
select convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 120) as s120,
       convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 101) as s101,
       convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 103) as s103,
       convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 112) as s112,
       convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 108) as s108,
       convert(varchar(30), cast('2024-03-05 14:07:09.123' as datetime), 126) as s126;
select cast(cast('2024-03-05 14:07:09.123' as datetime) as varchar(30)) as default_style,
       cast(cast('2024-03-05' as date) as varchar(20)) as date_text,
       cast(1234.5 as money) as m, convert(varchar(20), cast(1234.5 as money), 1) as m1;
select try_cast('x' as int) as bad, try_convert(int, '7') as good, cast(null as int) as null_cast;
select cast(1 as bit) as one, cast(0 as bit) as zero, cast(42 as bit) as nonzero, cast('true' as bit) as t;
select cast(0x41 as varchar(5)) as bin_text, cast('A' as varbinary(5)) as text_bin, cast(256 as varbinary(4)) as int_bin;
select cast('6F9619FF-8B86-D011-B42D-00C04FC964FF' as uniqueidentifier) as guid;
go
-- String functions.
select len('abc  ') as len_trailing, datalength('abc  ') as bytes, datalength(N'abc') as nbytes,
       substring('hello', 2, 3) as sub, left('hello', 2) as l, right('hello', 3) as r,
       upper('MiXeD') as u, lower('MiXeD') as lo, ltrim('  x  ') + '|' as lt, rtrim('  x  ') + '|' as rt, trim('  x  ') + '|' as tr;
select cast(replace('Hello World', 'o', '0') as varchar(12)) as rep, cast(replicate('ab', 3) as varchar(8)) as repl, reverse('abc') as rev,
       charindex('lo', 'hello') as ci, charindex('L', 'hello', 4) as ci_from, patindex('%l_o%', 'hello') as pi;
select concat('a', null, 1, 2.5) as conc, concat_ws('-', 'a', null, 'b') as cws, str(3.14159, 6, 2) as st,
       space(3) + '|' as sp, char(65) as ch, ascii('A') as asc_a, cast(stuff('abcdef', 2, 3, 'XY') as varchar(8)) as stf;
go
-- Math.
select abs(-5) as a, ceiling(4.2) as c, floor(-4.2) as f, power(2, 10) as p, sqrt(16) as sq, sign(-3) as s, square(3) as sq3, pi() as pi_val;
select case when rand(42) = rand(42) then 'repeatable' end as seeded, case when rand() between 0 and 1 then 'in range' end as unseeded;
go
select sqrt(-1);
go
-- Date and time functions (fixed dates, so the output is stable).
declare @d datetime = '2024-01-31 13:45:30.500';
select dateadd(day, 1, @d) as plus_day, dateadd(month, 1, @d) as plus_month, dateadd(year, -1, @d) as minus_year, dateadd(hour, 12, @d) as plus_12h;
select datediff(day, '2024-01-01', '2024-03-01') as days, datediff(month, '2023-12-31', '2024-01-01') as months, datediff(year, '2023-12-31', '2024-01-01') as years,
       datediff(minute, '2024-01-01 10:00', '2024-01-01 11:30') as minutes;
select datepart(year, @d) as y, datepart(quarter, @d) as q, datepart(month, @d) as m, datepart(dayofyear, @d) as dy, datepart(weekday, @d) as dw,
       datepart(hour, @d) as h, datepart(minute, @d) as mi, datepart(second, @d) as s, datepart(millisecond, @d) as ms;
select datename(month, @d) as month_name, datename(weekday, @d) as day_name, year(@d) as y, month(@d) as m, day(@d) as d, eomonth('2024-02-10') as eom, eomonth('2024-02-10', 1) as eom_next;
select datefromparts(2024, 12, 25) as xmas, isdate('2024-02-29') as leap, isdate('2023-02-29') as not_leap, isnumeric('12.5') as num, isnumeric('abc') as not_num;
select case when getdate() > '2020-01-01' then 'now is later' end as clock, case when sysdatetime() >= getutcdate() - 1 then 'ok' end as utc;
go
select dateadd(nonsense, 1, getdate());
go
-- Session and server functions.
select @@spid as spid, @@trancount as tc, @@nestlevel as nest, db_name() as db, db_id('master') as master_id, schema_name() as sch, suser_sname() as login;
select serverproperty('ProductVersion') as version, serverproperty('EngineEdition') as edition, @@servername as server_name, left(@@version, 48) as product, @@microsoftversion as packed, @@microsoftversion / 0x01000000 as major;
select object_id('no_such_table') as missing;
create table probe (a int, b varchar(30));
select object_name(object_id('probe')) as name_back, col_length('probe', 'b') as b_len, col_length('probe', 'zz') as none;
select checksum('abc') - checksum('ABC') as case_blind, case when newid() <> newid() then 'unique' end as guids;
go
-- LEFT_SHIFT and RIGHT_SHIFT, and their operators << and >> (SQL Server 2022): a logical
-- shift within the type's width; a negative amount shifts the other way.
SELECT LEFT_SHIFT(12345, 5) AS a, 12345 << 5 AS b, RIGHT_SHIFT(12345, 5) AS c, 12345 >> 5 AS d,
  CAST(1 AS tinyint) << 7 AS e, CAST(1 AS tinyint) << 8 AS f, 1 << -1 AS g, -1 >> 28 AS h,
  CAST(1 AS bigint) << 63 AS i, CAST(-1 AS smallint) >> 8 AS j;
SELECT n FROM (VALUES (1), (2), (3)) v(n) WHERE n << 1 > 2 ORDER BY n;
GO
SELECT LEFT_SHIFT(1.5, 1);
GO
SELECT 'a' >> 1;
GO
