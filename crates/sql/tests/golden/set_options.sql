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
