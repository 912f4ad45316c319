-- Databases, tables, constraints, indexes and data changes.
create database shop;
go
create database shop;
go
use shop;
select db_name() as current_db;
go
-- Every data type.
create table [dbo].[all types] (
    [id] int not null primary key,
    b bit, ti tinyint, si smallint, bi bigint,
    dc decimal(10, 3), nm numeric(5), mo money, fl float, re real,
    c char(5), vc varchar(10), nc nchar(3), nv nvarchar(8), vmax varchar(max), nvmax nvarchar(max),
    bn binary(3), vb varbinary(6), vbmax varbinary(max),
    d date, t time(3), dt datetime, dt2 datetime2(2), g uniqueidentifier
);
insert into [all types] values (
    1, 1, 255, -32768, 9223372036854775807,
    1234567.891, 12345, 922337203685477.5807, 1.5e10, 3.25,
    'ab', 'hello', N'né', N'wörld', replicate('x', 20), N'ünï',
    0x0A0B, 0xFFEE, 0x00,
    '2024-02-29', '13:45:30.123', '2024-01-31 23:59:59.997', '2000-01-01 00:00:00.55', '6F9619FF-8B86-D011-B42D-00C04FC964FF'
);
insert into [all types] (id) values (2);
select id, b, ti, si, bi, dc, nm, mo from [all types] order by id;
select id, fl, re, c, vc, nc, nv, bn, vb, vbmax from [all types] order by id;
select id, cast(vmax as varchar(30)) as vmax, cast(nvmax as nvarchar(10)) as nvmax, d, t, dt, dt2, g from [all types] order by id;
select datalength(c) as c_bytes, datalength(nc) as nc_bytes, len(c) as c_len, datalength(vmax) as vmax_bytes from dbo.[all types] where id = 1;
go
-- Defaults, identity, NOT NULL, CHECK, UNIQUE and named constraints.
create table orders (
    id int identity(100, 5) constraint pk_orders primary key,
    customer varchar(20) not null,
    qty int not null constraint ck_qty check (qty > 0),
    status varchar(10) constraint df_status default 'new',
    code char(3) null constraint uq_code unique,
    created date default '2020-01-01'
);
insert into orders (customer, qty) values ('ann', 1);
insert into orders (customer, qty, status, code) values ('bob', 2, 'paid', 'B01'), ('cid', 3, default, 'C01');
insert into orders default values;
insert into orders (customer, qty) values ('dee', 0);
insert into orders (customer, qty, code) values ('eve', 1, 'B01');
insert into orders (customer, qty) values ('this name is far too long', 1);
insert into orders (id, customer, qty) values (1, 'x', 1);
insert into orders values ('fay', 1, 'x', 'F01', '2021-05-05', 'extra');
insert into orders values ('fay', 1);
select * from orders order by id;
select @@identity as last_identity, scope_identity() as scope, ident_current('orders') as cur;
go
set identity_insert orders on;
insert into orders (id, customer, qty, code) values (7, 'explicit', 1, 'E07');
set identity_insert orders off;
insert into orders (customer, qty, code) values ('after', 1, 'A01');
insert into orders (customer, qty) values ('second null code', 1);
select id, customer from orders where id in (7, 130) order by id;
go
-- Foreign keys: NO ACTION, CASCADE, SET NULL.
create table parent (id int primary key, name varchar(10));
create table child (id int primary key, parent_id int constraint fk_child_parent references parent (id), note varchar(10));
create table cascaded (id int primary key, parent_id int, constraint fk_cascade foreign key (parent_id) references parent (id) on delete cascade);
create table nulled (id int primary key, parent_id int references parent (id) on delete set null);
insert into parent values (1, 'p1'), (2, 'p2'), (3, 'p3');
insert into child values (10, 1, 'ok'), (11, null, 'orphan ok');
insert into child values (12, 9, 'bad');
insert into cascaded values (20, 2), (21, 2);
insert into nulled values (30, 3);
delete from parent where id = 1;
delete from parent where id = 2;
delete from parent where id = 3;
select * from cascaded;
select * from nulled;
select * from parent order by id;
drop table parent;
truncate table parent;
go
-- UPDATE, UPDATE … FROM a join, compound assignment, DELETE with TOP and a join, OUTPUT.
create table stock (sku varchar(5) primary key, qty int not null, price decimal(6,2));
create table delivery (sku varchar(5), extra int);
insert into stock values ('a', 1, 1.50), ('b', 2, 2.00), ('c', 3, 3.25);
insert into delivery values ('a', 10), ('c', 30);
update stock set qty += 100, price = price * 2 where sku = 'b';
update s set qty = s.qty + d.extra from stock s join delivery d on d.sku = s.sku;
select * from stock order by sku;
update stock set qty = qty - 1 output deleted.qty as before, inserted.qty as after where sku = 'a';
delete top (1) from stock where qty > 100;
delete s from stock s join delivery d on d.sku = s.sku where d.extra = 30;
select * from stock order by sku;
update stock set qty = null where sku = 'a';
update stock set sku = 'zzzzzz' where sku = 'a';
select @@rowcount as rowcount_after_error;
go
-- Indexes.
create table people (id int primary key nonclustered, last varchar(20), first varchar(20), age int);
create clustered index cx_people_last on people (last, first);
create unique index ux_people_age on people (age) ;
insert into people values (1, 'smith', 'ann', 30), (2, 'jones', 'bob', 40), (3, 'smith', 'cid', 50);
insert into people values (4, 'brown', 'dee', 30);
select id, last, first from people where last = 'smith' order by first;
select id from people where age between 35 and 60 order by age desc;
create index ix_people_first on people (first desc) include (age);
create index ix_people_first on people (first);
create unique index ux_people_last on people (last);
select first from people where first > 'b' order by first;
drop index ix_people_first on people;
drop index people.ix_nothing;
select name, type_desc, is_unique, is_primary_key from sys.indexes where object_id = object_id('people') order by index_id;
go
-- ALTER TABLE.
create table grow (id int primary key, a int);
insert into grow values (1, 10), (2, 20);
alter table grow add b varchar(10) null, c int not null default 7;
select * from grow order by id;
alter table grow add d int not null;
alter table grow add constraint ck_a check (a < 15);
alter table grow add constraint ck_a2 check (a < 100);
alter table grow drop constraint ck_a2;
alter table grow drop column b;
alter table grow drop column id;
alter table grow alter column a bigint not null;
select * from grow order by id;
insert into grow (id, a) values (3, 30);
select column_name, data_type, is_nullable from information_schema.columns where table_name = 'grow' order by ordinal_position;
go
-- Truncate resets identity; temp tables; three-part names; DROP.
create table seq (id int identity, v int);
insert into seq (v) values (1), (2);
truncate table seq;
insert into seq (v) values (3);
select * from seq;
create table #scratch (x int);
insert into #scratch values (1), (2);
select count(*) as temp_rows from #scratch;
select count(*) as via_three_part from shop.dbo.seq;
drop table #scratch;
select * from #scratch;
go
drop table if exists nothing_here;
drop table nothing_here;
go
create table seq (x int);
go
use master;
drop database shop;
go
drop database shop;
go
-- OBJECT_ID reads a name as T-SQL writes it: brackets and quotes with their escapes,
-- dots inside them, empty parts.
create table [odd]]name] (a int);
create table [dotted.name] (a int);
select case when object_id('dbo.[odd]]name]') = object_id('[odd]]name]') then 'same' else 'differs' end as bracketed,
       case when object_id('"dotted.name"') is not null and object_id('..[dotted.name]') = object_id('"dotted.name"') then 'found' else 'missing' end as quoted,
       object_id('[odd]name]') as wrong_escape,
       object_id('[unclosed') as unclosed;
drop table [odd]]name];
drop table [dotted.name];
go
