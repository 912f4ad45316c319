-- Seed 002 (SQL Server 2014 Buffer Pool Extension test), as its author ran it, with the
-- row and query counts as sqlcmd scripting variables:
--   tessera sql --data-dir DIR -i scripts/sql/seed002.sql -v rows=1000000 queries=10000
-- The second half repeats the queries after emptying the buffer pool of clean pages
-- (the seed's cold-cache test).
use [master];
go

create database [BufferPoolExtensions_test];
go

use [BufferPoolExtensions_test];
go

create table [dbo].[TestTable] (
	[id] int identity(1,1) not null,
	[n] [char](1000) not null,

	constraint [PK_TestTable] primary key clustered ([id])
);
go

set nocount on;
insert into [dbo].[TestTable] ([n])
values (replicate('A', 1000));
go $(rows)

select count(*) as [rows], min([id]) as [first], max([id]) as [last] from [dbo].[TestTable];
go

set nocount on;
select [n]
from [dbo].[TestTable]
where [id] = cast(rand(checksum(newid())) * $(rows) as int) + 1;
go $(queries)

dbcc dropcleanbuffers;
go

set nocount on;
select [n]
from [dbo].[TestTable]
where [id] = cast(rand(checksum(newid())) * $(rows) as int) + 1;
go $(queries)
