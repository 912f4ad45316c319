-- Large values (issue 34): (max) values longer than 8,000 bytes live off the row, and
-- variable-length values of a row longer than 8,060 bytes overflow it (longest first);
-- every statement reads and changes them as in-row values.
create table docs (id int primary key, title varchar(200), body varchar(max), note nvarchar(max), blob varbinary(max));
insert docs values
  (1, 'big', replicate(cast('0123456789' as varchar(max)), 3000), replicate(cast(N'żółw ' as nvarchar(max)), 4000), cast(replicate(cast('ab' as varchar(max)), 40000) as varbinary(max))),
  (2, 'small', 'tiny', N'tiny', 0x0102),
  (3, 'exactly 8000', replicate(cast('x' as varchar(max)), 8000), null, null),
  (4, 'one more', replicate(cast('y' as varchar(max)), 8001), null, null);
select id, cast(title as varchar(12)) as title, len(body) as body_len, datalength(note) as note_bytes, datalength(blob) as blob_bytes,
       cast(left(body, 12) as varchar(12)) as head, cast(right(note, 5) as nvarchar(5)) as note_tail, cast(substring(blob, 79999, 2) as varbinary(2)) as blob_tail,
       charindex('9012', body) as at, case when body like '%789' then 1 else 0 end as ends_789
from docs order by id;
go
-- Change the values: append, shrink into the row, grow out of it, leave one alone.
update docs set body = body + '!' where id = 1;
update docs set note = N'short now' where id = 1;
update docs set body = replicate(cast('z' as varchar(max)), 20000) where id = 2;
update docs set title = 'renamed' where id = 4;
select id, cast(title as varchar(12)) as title, len(body) as body_len, cast(right(body, 3) as varchar(3)) as tail, len(note) as note_len, datalength(blob) as blob_bytes
from docs order by id;
go
-- Rollbacks and savepoints put the old values back.
begin tran;
update docs set body = 'gone' where id = 1;
delete docs where id = 2;
save tran sp;
update docs set blob = 0x00 where id = 1;
rollback tran sp;
select id, len(body) as body_len, datalength(blob) as blob_bytes from docs order by id;
rollback;
select id, len(body) as body_len, datalength(blob) as blob_bytes from docs order by id;
go
-- A change of the clustered key moves the row with its values.
update docs set id = 10 where id = 1;
select id, len(body) as body_len, datalength(note) as note_bytes, datalength(blob) as blob_bytes from docs where id = 10;
go
-- Row overflow: three varchar(5000) values of 4,000 bytes do not fit one row together.
create table wide (id int identity primary key, a varchar(5000), b varchar(5000), c varchar(5000), d char(10));
insert wide (a, b, c, d) values (replicate('a', 4000), replicate('b', 4000), replicate('c', 4000), 'd');
insert wide (a, b, c, d) values (replicate('a', 10), replicate('b', 20), replicate('c', 30), 'd');
select id, len(a) as a, len(b) as b, len(c) as c, d, cast(left(c, 2) + right(a, 2) as varchar(4)) as ends from wide order by id;
update wide set a = a + 'x', b = 'short' where id = 1;
select id, len(a) as a, cast(b as varchar(10)) as b, len(c) as c from wide where id = 1;
go
-- Indexes, joins, grouping and sorting read them as any value.
create index ix_title on docs (title) include (body);
select d.id, len(d.body) as body_len, w.id as wide_id
from docs d join wide w on w.id + 1 = d.id;
select len(body) as body_len, count(*) as n from docs group by len(body) order by body_len;
select top 2 id, len(body) as body_len from docs order by body desc;
go
-- INSERT ... SELECT copies values; ALTER TABLE rebuilds keep them; TRUNCATE and DROP
-- take them away.
select * into docs_copy from docs;
insert docs_copy select id + 100, title, body + body, note, blob from docs where id = 10;
alter table docs_copy add extra int;
alter table docs_copy alter column title varchar(300);
select id, len(body) as body_len, datalength(note) as note_bytes, datalength(blob) as blob_bytes from docs_copy order by id;
truncate table docs_copy;
insert docs_copy (id, body) values (1, replicate(cast('q' as varchar(max)), 9000));
select id, len(body) as body_len from docs_copy;
drop table docs_copy;
go
-- Temporary tables and table variables hold them too.
create table #t (id int, v nvarchar(max));
insert #t values (1, replicate(cast(N'ü' as nvarchar(max)), 30000));
declare @tv table (id int, v varbinary(max));
insert @tv values (1, cast(replicate(cast('z' as varchar(max)), 70000) as varbinary(max)));
select (select len(v) from #t) as temp_len, (select datalength(v) from @tv) as var_bytes;
drop table #t;
go
-- What still cannot be stored: a row whose fixed part and in-row data exceed 8,060 bytes.
create table fixed_big (a char(8000), b varchar(100));
insert fixed_big values ('a', replicate('b', 100));
go
create table too_fixed (a char(8000), b char(100));
go
-- Values no longer than a pointer stay in the row: these cannot make room (511).
create table tight (a char(8000), b varchar(16), c varchar(16), d varchar(16));
insert tight values ('a', replicate('b', 16), replicate('c', 16), replicate('d', 16));
go
-- sp_tableoption 'large value types out of row': every non-empty (max) value goes off the
-- row from then on; the option goes with the transaction like other DDL.
create table opt (id int primary key, v varchar(max), w varbinary(max));
exec sp_tableoption 'dbo.opt', 'large value types out of row', 'ON';
select name, large_value_types_out_of_row, text_in_row_limit from sys.tables where name in ('opt', 'wide') order by name;
insert opt values (1, 'short', 0x01), (2, '', null), (3, replicate('x', 100), 0x);
update opt set v = v + '!' where id = 1;
select id, cast(v as varchar(10)) as v, cast(w as varbinary(4)) as w, datalength(v) as v_bytes from opt where id < 3 order by id;
begin tran;
exec sp_tableoption 'opt', 'large value types out of row', 0;
select large_value_types_out_of_row as inside from sys.tables where name = 'opt';
rollback;
select large_value_types_out_of_row as after_rollback from sys.tables where name = 'opt';
go
exec sp_tableoption 'opt', 'text in row', 'ON';
go
exec sp_tableoption 'nosuch', 'large value types out of row', 'ON';
go
exec sp_tableoption 'opt', 'large value types out of row', 'maybe';
go
exec sp_tableoption 'opt', 'large value types out of row';
go
select count(*) as rows_left from fixed_big;
dbcc checkdb with no_infomsgs;
select 'checked' as done;
go
go
-- Values of a MiB and more are read where they are stored, in pieces, by what can
-- (results, storing, DATALENGTH, LEN, SUBSTRING, LEFT, RIGHT, CHARINDEX); every other
-- operator reads them whole. The answers are those of the values read whole.
create table big (id int primary key, t varchar(max), n nvarchar(max), b varbinary(max));
insert big values (1, replicate(cast('abcdefghij' as varchar(max)), 110000) + 'END   ',
  replicate(cast(N'żółw ' as nvarchar(max)), 220000) + N'koniec',
  cast(replicate(cast('xy' as varchar(max)), 600000) as varbinary(max)));
insert big select 2, t + 'more', n, b + 0x00ff from big where id = 1;
select id, datalength(t) as t_bytes, len(t) as t_len, datalength(n) as n_bytes, len(n) as n_len, datalength(b) as b_bytes,
  cast(substring(t, 1099995, 20) as varchar(20)) as t_part, cast(left(n, 6) as nvarchar(6)) as n_head,
  cast(right(n, 8) as nvarchar(8)) as n_tail, cast(substring(b, 1199999, 4) as varbinary(4)) as b_tail,
  charindex('END', t) as t_end, charindex(N'KONIEC', n) as n_end, charindex('abc', t, 11) as t_next,
  case when t like 'abc%END%' then 1 else 0 end as t_like,
  case when t like 'ABCD%' then 1 else 0 end as t_prefix, case when n like N'%W KONIEC%' then 1 else 0 end as n_has,
  case when t like '%zzz%' then 1 else 0 end as t_has_zzz, case when t not like 'b%' then 1 else 0 end as t_not_b
from big order by id;
select count(*) as same_n from big a join big c on a.n = c.n and a.id < c.id;
select id as longer from big where t > (select t from big where id = 1);
select len(n) as n_len, count(*) as rows_with_it from big group by n;
go
declare @v varchar(max) = (select t from big where id = 2);
select len(@v) as var_len, datalength(@v + 'x') as plus_one, cast(right(@v, 4) as varchar(4)) as var_tail;
update big set t = n where id = 2;
update big set b = b where id = 1;
select id, len(t) as t_len, cast(right(t, 6) as varchar(6)) as t_tail, datalength(b) as b_bytes from big order by id;
select id, t into #bigcopy from big;
select id, datalength(t) as copied from #bigcopy order by id;
drop table #bigcopy;
create table small_col (v varchar(10));
insert small_col select t from big where id = 1;
go
select id, cast(t as varchar(5)) as cut_by_cast from big order by id;
dbcc checkdb with no_infomsgs;
drop table big;
go
-- UPDATE ... SET col.WRITE(value, offset, length): part of a (max) value replaced.
create table w (id int primary key, b varbinary(max), v varchar(max), n nvarchar(max), s varchar(50));
insert w values (1, 0x0102030405, 'hello world', N'héllo wörld', 'x'), (2, null, null, null, null);
update w set v.write('J', 0, 1) where id = 1;
update w set v.WRITE('!!', null, null), n.write(N'W', 6, 1) where id = 1;
update w set b.write(0xffee, 2, null) where id = 1;
select v, n, b from w where id = 1;
update w set v.write('big', 6, 5) where id = 1;
select v, datalength(v) as bytes from w where id = 1;
update w set v.write(null, 3, 100), b.write(0x99, 0, 0) where id = 1;
select v, b from w where id = 1;
update w set v.write('tail', 100, 1) where id = 1;
go
update w set v.write('x', -1, 1) where id = 1;
go
update w set v.write('x', 0, -1) where id = 1;
go
update w set v.write('x', 0, 1) where id = 2;
go
update w set s.write('x', 0, 1) where id = 1;
go
update w set v.write('x', 0, 1), v = 'a' where id = 1;
go
update w set w.v.write('x', 0, 1) where id = 1;
go
-- Values stored off the row: overwritten in the middle, appended to, cut, cut back into the row.
update w set v = replicate(cast('a' as varchar(max)), 20000), n = replicate(cast(N'ż' as nvarchar(max)), 9000) where id = 1;
update w set v.write('XYZ', 7998, 3), n.write(N'ÓÓ', 4000, 2) where id = 1;
select datalength(v) as v_bytes, substring(v, 7996, 8) as v_mid, datalength(n) as n_bytes, substring(n, 3999, 5) as n_mid from w where id = 1;
update w set v.write(replicate('b', 10000), null, null) output datalength(deleted.v) as before_bytes, datalength(inserted.v) as after_bytes where id = 1;
update w set v.write('<>', 15000, 10) where id = 1;
select datalength(v) as v_bytes, substring(v, 14998, 6) as shifted, right(v, 3) as v_end, len(replace(v, 'a', '')) as not_a from w where id = 1;
begin tran;
update w set v.write('ROLLED', 0, 6) where id = 1;
select left(v, 8) as in_tran from w where id = 1;
rollback;
select left(v, 8) as after_rollback from w where id = 1;
update w set v.write(null, 8100, null) where id = 1;
select datalength(v) as cut_bytes, right(v, 4) as cut_end from w where id = 1;
update w set v.write(null, 5, null) where id = 1;
select v as back_in_row from w where id = 1;
go
-- A 2 MiB value: a few bytes in the middle, then appended, read where they are.
update w set b = cast(replicate(cast('0123456789abcdef' as varchar(max)), 131072) as varbinary(max)) where id = 1;
update w set b.write(0x2a2a2a2a, 1048574, 4) where id = 1;
update w set b.write(0x454e44, null, null) where id = 1;
select datalength(b) as b_bytes, substring(b, 1048571, 10) as b_mid, substring(b, datalength(b) - 4, 5) as b_end from w where id = 1;
dbcc checkdb with no_infomsgs;
drop table w;
go
