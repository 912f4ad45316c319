create table t (id int primary key, v varchar(20), price decimal(10,2));
insert into t values (1, 'a', 10), (2, 'b', 20.5), (3, 'c', 30);
go
create function dbo.add_tax(@p decimal(10,2), @rate int = 20) returns decimal(12,2)
as
begin
    declare @r decimal(12,2);
    set @r = @p * (100 + @rate) / 100;
    return @r;
end
go
select id, dbo.add_tax(price, 10) as with_tax, dbo.add_tax(price, default) as std from t;
go
create view v_cheap as select id, v from t where price < 25;
go
select * from v_cheap order by id desc;
select c.v, t.price from v_cheap c join t on t.id = c.id;
go
create function dbo.rows_above(@min decimal(10,2)) returns table as return (select id, price from t where price > @min);
go
select * from dbo.rows_above(15) r order by r.id;
go
create view v_bad as select nosuch from t;
go
drop view v_cheap;
select * from v_cheap;
go
-- Table variables.
declare @t table (id int primary key, name varchar(10) not null);
insert into @t values (2, 'b'), (1, 'a');
select * from @t order by id;
update @t set name = 'z' where id = 2;
delete from @t where id = 1;
select * from @t;
insert into @t values (2, 'dup');
go
select * from @t;
go
create procedure uses_tv as begin declare @t table (x int); insert into @t values (5); select x from @t; end
go
declare @t table (y int); insert into @t values (9); exec uses_tv; select y from @t;
go
-- A function calling a function; nesting and recursion limits.
create function dbo.twice(@x int) returns int as begin return @x * 2 end
go
create function dbo.quad(@x int) returns int as begin return dbo.twice(dbo.twice(@x)) end
go
select dbo.quad(3) as twelve;
go
create function dbo.fact(@n int) returns bigint as begin if @n <= 1 return 1; return @n * dbo.fact(@n - 1) end
go
select dbo.fact(10) as f10;
select dbo.fact(40) as too_deep;
go
-- Views over views and a view in another database's catalog.
create view v1 as select id, price from t;
go
create view v2 (ident, cost) as select id, price * 2 from v1 where id > 1;
go
select * from v2 order by ident;
go
-- OUTPUT … INTO a table variable and a table.
create table items (id int identity primary key, v varchar(10));
create table audit (id int, v varchar(10), action varchar(10));
declare @log table (id int, v varchar(10), action varchar(10));
insert into items (v) output inserted.id, inserted.v, 'insert' into @log values ('a'), ('b');
update items set v = 'z' output deleted.id, deleted.v, 'old' into audit (id, v, action) where id = 1;
delete from items output deleted.* where id = 2;
select * from @log order by id;
select * from audit;
go
