-- Sequences: CREATE, ALTER and DROP SEQUENCE with SQL Server's defaults and checks;
-- NEXT VALUE FOR in queries, INSERT … VALUES and … SELECT, and defaults; values belong to
-- no transaction; RESTART, CYCLE and exhaustion; sys.sequences and
-- INFORMATION_SCHEMA.SEQUENCES.
create sequence dbo.ticket_seq start with 1 increment by 50;
create sequence counter as int;
create sequence down as smallint start with 10 increment by -3 minvalue 0 maxvalue 10 no cache;
create sequence ring as tinyint minvalue 1 maxvalue 3 cycle cache 2;
create sequence big as decimal(20, 0) start with 99999999999999999990 no cycle;
go
select next value for ticket_seq as first_ticket;
select next value for dbo.ticket_seq as second_ticket;
select next value for counter as counter_starts_at_its_minimum;
select next value for down as d;
select next value for down as d;
select next value for down as d;
select next value for down as d;
go
select next value for down as exhausted;
go
select next value for ring as r from (values (1), (2), (3), (4), (5)) v(n);
select next value for big as big_value;
go
create table orders (id int not null constraint df_orders_id default (next value for counter) primary key, item varchar(10));
insert orders (item) values ('a'), ('b');
insert orders (id, item) select next value for counter, 'c';
-- One value per row for every NEXT VALUE FOR of a sequence in it (SQL Server's rule);
-- each row its own.
create sequence pair_seq as int start with 100;
select next value for pair_seq as a, next value for pair_seq as b from (values (1), (2)) v(n);
create table pairs (n int, x int, y int);
insert pairs values (1, next value for pair_seq, next value for pair_seq), (2, next value for pair_seq, next value for pair_seq);
select n, x, y from pairs order by n;
update pairs set x = next value for pair_seq, y = next value for pair_seq;
select n, x, y from pairs order by n;
drop table pairs;
drop sequence pair_seq;
select id, item from orders order by id;
go
-- A rollback gives no value back.
begin tran;
select next value for counter as in_transaction;
rollback;
select next value for counter as after_rollback;
go
alter sequence counter restart with 100 increment by 10;
select next value for counter as restarted;
select next value for counter as then_next;
go
alter sequence counter restart;
select next value for counter as back_at_the_start;
go
select name, start_value, increment, minimum_value, maximum_value, is_cycling, is_cached, cache_size,
  type_name(system_type_id) as type, precision, scale, current_value, is_exhausted, last_used_value
from sys.sequences order by name;
select sequence_schema, sequence_name, data_type, numeric_precision, numeric_scale, start_value, minimum_value,
  maximum_value, increment, cycle_option
from information_schema.sequences order by sequence_name;
select name, type, type_desc from sys.objects where type = 'SO' order by name;
select objectpropertyex(object_id('ring'), 'BaseType') as base_type;
go
-- SQL Server's checks.
create sequence bad increment by 0;
go
create sequence bad minvalue 10 maxvalue 5;
go
create sequence bad as varchar(10);
go
create sequence bad as tinyint start with 300;
go
create sequence bad minvalue 1 maxvalue 10 start with 11;
go
create sequence bad cache 0;
go
create sequence bad as tinyint increment by 200 minvalue 0 maxvalue 100;
go
create sequence counter;
go
select next value for nosuch;
go
exec sp_rename 'ring', 'circle';
select next value for circle as renamed;
go
drop sequence if exists nosuch;
drop sequence down, circle, big;
go
drop sequence nosuch;
go
drop table orders;
drop sequence counter, ticket_seq;
select count(*) as sequences_left from sys.sequences;
go
-- A plan bound to a sequence draws on the sequence of that name where and when it runs:
-- one dropped and made again starts afresh, and a plan shared by two databases draws
-- on each one's own (once, a cached plan kept the first one's object id: the same value
-- twice, and another sequence advanced).
create sequence again start with 1;
go
select next value for again as v;
go
drop sequence again;
go
create sequence again start with 1;
go
select next value for again as v;
go
drop sequence again;
go
create database seq_a;
go
create database seq_b;
go
use seq_a;
create sequence s start with 1;
go
use seq_b;
create sequence other start with 1;
go
use seq_b;
create sequence s start with 100;
go
use seq_a;
select next value for s as v;
go
use seq_b;
select next value for s as v;
go
use seq_a;
select next value for s as v;
go
use seq_b;
select next value for s as v;
select last_used_value as untouched from sys.sequences where name = 'other';
go
use master;
drop database seq_a;
drop database seq_b;
go
-- sp_sequence_get_range: a contiguous range handed out at once, as NEXT VALUE FOR would
-- have given its values; the cycle count; 11732 when a sequence without CYCLE has too
-- few left (nothing is taken), 11733 for a size below one.
CREATE SEQUENCE ranged AS int START WITH 1 INCREMENT BY 5 MINVALUE 1 MAXVALUE 40 CYCLE CACHE 3;
CREATE SEQUENCE short_seq AS smallint START WITH 1 MAXVALUE 10;
GO
DECLARE @first bigint, @last bigint, @cycles int, @inc bigint, @min bigint, @max bigint;
EXEC sp_sequence_get_range @sequence_name = N'dbo.ranged', @range_size = 3, @range_first_value = @first OUTPUT,
     @range_last_value = @last OUTPUT, @range_cycle_count = @cycles OUTPUT, @sequence_increment = @inc OUTPUT,
     @sequence_min_value = @min OUTPUT, @sequence_max_value = @max OUTPUT;
SELECT @first AS first_value, @last AS last_value, @cycles AS cycles,
       @inc AS increment, @min AS min_value, @max AS max_value;
SELECT NEXT VALUE FOR ranged AS after_range;
EXEC sp_sequence_get_range N'ranged', 6, @first OUTPUT, @last OUTPUT, @cycles OUTPUT;
SELECT @first AS first_value, @last AS last_value, @cycles AS cycles;
GO
DECLARE @first bigint;
EXEC sp_sequence_get_range N'short_seq', 8, @first OUTPUT;
SELECT @first AS first_of_8;
EXEC sp_sequence_get_range N'short_seq', 3, @first OUTPUT;
SELECT NEXT VALUE FOR short_seq AS still_there;
EXEC sp_sequence_get_range N'short_seq', 0, @first OUTPUT;
EXEC sp_sequence_get_range N'no_such_sequence', 1, @first OUTPUT;
GO
-- NEXT VALUE FOR … OVER (ORDER BY …): values handed out in that order, whatever order
-- the rows come back in; it needs ORDER BY.
CREATE SEQUENCE ordered_seq START WITH 100 INCREMENT BY 10;
CREATE TABLE fruit (name varchar(10));
INSERT INTO fruit VALUES ('pear'), ('apple'), ('fig');
GO
SELECT NEXT VALUE FOR ordered_seq OVER (ORDER BY name) AS id, name FROM fruit ORDER BY name DESC;
SELECT NEXT VALUE FOR ordered_seq OVER (ORDER BY name DESC) AS id, name INTO #numbered FROM fruit;
SELECT id, name FROM #numbered ORDER BY id;
GO
SELECT NEXT VALUE FOR ordered_seq OVER () FROM fruit;
GO
