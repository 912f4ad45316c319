-- @@OPTIONS and DBCC USEROPTIONS follow SET: 5496 for a new session.
select @@options;
go
set xact_abort on;
set arithignore on;
set ansi_padding off;
select @@options, @@options & 16384, @@options & 128, @@options & 16;
go
dbcc useroptions;
go
set ansi_null_dflt_off on;
select @@options & 1024, @@options & 2048;
go
set ansi_defaults on;
select @@options & (2 | 4 | 8 | 16 | 32 | 256 | 1024), @@trancount;
set ansi_defaults off;
set implicit_transactions off;
go
-- SET TEXTSIZE 0 restores the default, 4096; -1 is the largest.
set xact_abort off;
set textsize 0;
select @@textsize as default_size;
set textsize -1;
select @@textsize as largest;
set textsize 100;
select @@textsize as set_size;
go
-- A column that says neither NULL nor NOT NULL: nullable while ANSI_NULL_DFLT_ON is on
-- (the default); NOT NULL once it is off (the database's ANSI_NULL_DEFAULT is OFF).
set ansi_null_dflt_on off;
create table #dflt_off (id int);
insert #dflt_off values (null);
alter table #dflt_off add more int;
go
set ansi_null_dflt_on on;
create table #dflt_on (id int);
insert #dflt_on values (null);
select c.name, c.is_nullable from tempdb.sys.columns c where c.object_id in (object_id('tempdb..#dflt_off'), object_id('tempdb..#dflt_on')) order by c.object_id, c.column_id;
drop table #dflt_off;
drop table #dflt_on;
go
-- sys.dm_exec_sessions shows the session's options as of its last request.
set ansi_nulls on;
set quoted_identifier on;
set textsize 0;
go
select text_size, language, date_format, date_first, quoted_identifier, ansi_nulls, transaction_isolation_level, lock_timeout from sys.dm_exec_sessions where session_id = @@spid;
go
set textsize 1000;
set lock_timeout 250;
set transaction isolation level serializable;
set dateformat dmy;
set datefirst 1;
set quoted_identifier off;
go
select text_size, language, date_format, date_first, quoted_identifier, ansi_nulls, transaction_isolation_level, lock_timeout from sys.dm_exec_sessions where session_id = @@spid;
go
set textsize -1;
set lock_timeout -1;
set transaction isolation level read committed;
set dateformat mdy;
set datefirst 7;
set quoted_identifier on;
go
