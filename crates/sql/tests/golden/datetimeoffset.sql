-- datetimeoffset(n): literals, conversions, precedence, storage and keys (by UTC instant), functions, catalog.
declare @d datetimeoffset = '2025-03-04 10:11:12.1234567 +05:30';
select @d as d, cast('2025-03-04 10:11:12' as datetimeoffset(0)) as no_offset,
       cast('2025-03-04T10:11:12.5-08:00' as datetimeoffset(3)) as iso;
select cast(@d as datetime2) as dt2, cast(@d as date) as d, cast(@d as time(3)) as t,
       cast(@d as datetime) as dt, cast(@d as smalldatetime) as sdt;
select convert(varchar(40), @d) as dflt, convert(varchar(40), @d, 121) as s121;
select convert(varchar(40), @d, 126) as s126, convert(varchar(40), @d, 127) as s127;
select cast(cast('2025-03-04 10:11:12.5' as datetime2(1)) as datetimeoffset(1)) as from_dt2,
       cast(cast('2025-03-04' as date) as datetimeoffset(0)) as from_date;
select cast('2025-12-31 23:59:59.9999999 +01:00' as datetimeoffset(0)) as rounded,
       cast('2025-03-04 10:11:12.125 -03:00' as datetimeoffset(2)) as r2;
select case when 1 = 1 then cast('2025-03-04' as datetime2(0)) else @d end as precedence;
select case when cast('2025-03-04 10:00 +05:30' as datetimeoffset) = cast('2025-03-04 04:30 +00:00' as datetimeoffset)
            then 'equal' else 'different' end as same_instant,
       case when cast('2025-03-04 10:00 +05:30' as datetimeoffset) < cast('2025-03-04 05:00 +00:00' as datetimeoffset)
            then 'earlier' else 'later' end as ordered,
       case when cast('2025-03-04 04:30' as datetime2) = cast('2025-03-04 10:00 +05:30' as datetimeoffset)
            then 'equal' else 'different' end as vs_datetime2;
select count(*) as n from (select cast('2025-03-04 10:00 +05:30' as datetimeoffset) as v
                           union select cast('2025-03-04 04:30 +00:00' as datetimeoffset)) u;
go
select cast('2025-03-04 10:00 +15:00' as datetimeoffset);
go
select cast(sysdatetimeoffset() as int);
go
select sysdatetimeoffset() + 1;
go
create table dbo.events (at datetimeoffset(3) not null constraint pk_events primary key, label varchar(10) not null);
insert into dbo.events values ('2025-03-04 10:00:00 +05:30', 'india'), ('2025-03-04 01:00:00 -08:00', 'pacific'),
                              ('2025-03-04 06:00:00 +00:00', 'utc');
select at, label from dbo.events order by at;
select label from dbo.events where at = '2025-03-04 17:00:00 +08:00';
select count(*) as n from dbo.events where at >= '2025-03-04 05:00 +00:00';
go
insert into dbo.events values ('2025-03-04 04:30:00 +00:00', 'dup');
go
alter table dbo.events add seen datetimeoffset(0) null;
go
update dbo.events set seen = switchoffset(at, '+01:00') where label = 'utc';
select label, seen from dbo.events where seen is not null;
go
declare @d datetimeoffset = '2025-03-04 10:11:12.1234567 +05:30';
select todatetimeoffset(cast('2025-03-04 10:11:12.1234567' as datetime2), '-07:00') as t1,
       todatetimeoffset(cast('2025-03-04 10:11:12' as datetime2(0)), 330) as t2;
select switchoffset(@d, '-05:00') as sw, switchoffset(@d, 0) as utc;
select datepart(tz, @d) as tz, datepart(tzoffset, '2007-05-10 00:00:01.1234567 +05:10') as tz_text,
       datepart(tz, cast('2025-03-04' as datetime2)) as tz_dt2, datepart(hour, @d) as hh, datepart(minute, @d) as mi,
       datepart(day, @d) as dd, datepart(nanosecond, @d) as ns;
select datename(tzoffset, @d) as tzname, datename(month, @d) as mon, datename(weekday, @d) as wd;
select dateadd(hour, 20, @d) as plus20h, dateadd(month, 1, cast('2025-01-31 12:00 -03:00' as datetimeoffset(0))) as plus1m;
select datediff(hour, cast('2025-03-04 10:00 +05:30' as datetimeoffset), cast('2025-03-04 10:00 +00:00' as datetimeoffset)) as hours,
       datediff(day, cast('2025-03-04 23:00 -05:00' as datetimeoffset), cast('2025-03-05 01:00 -05:00' as datetimeoffset)) as days;
select datepart(tz, sysdatetimeoffset()) as tz_now, datediff(minute, sysdatetimeoffset(), sysutcdatetime()) as drift;
go
select todatetimeoffset(sysdatetime(), '+14:01');
go
select switchoffset(sysdatetimeoffset(), 900);
go
select datepart(tz, cast('2025-03-04' as datetime));
go
create procedure dbo.shift @v datetimeoffset(2), @out datetimeoffset(2) output as set @out = switchoffset(@v, '+09:00');
go
declare @r datetimeoffset(2);
exec dbo.shift '2025-03-04 10:11:12.345 +00:00', @r output;
select @r as r;
go
select name, system_type_id, max_length, [precision], scale from sys.types where name = 'datetimeoffset';
select type_name(43) as tn, type_id('datetimeoffset') as tid;
create table dbo.t2 (a datetimeoffset, b datetimeoffset(0), c datetimeoffset(4));
select c.name, type_name(c.system_type_id) as type, c.max_length, c.[precision], c.scale
from sys.columns c where c.object_id = object_id('dbo.t2') order by c.column_id;
select COLUMN_NAME, DATA_TYPE from INFORMATION_SCHEMA.COLUMNS where TABLE_NAME = 't2' order by ORDINAL_POSITION;
go
