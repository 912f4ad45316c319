-- Queries: filters, ordering, TOP/OFFSET, DISTINCT, grouping, joins, subqueries, set
-- operations, CTEs, CASE/LIKE/BETWEEN/IN, NULL logic and collation.
create table dept (id int primary key, name varchar(20) not null);
create table emp (
    id int primary key,
    name varchar(20) not null,
    dept_id int null references dept (id),
    salary decimal(8,2) not null,
    boss int null
);
create index ix_emp_dept on emp (dept_id);
insert into dept values (1, 'Sales'), (2, 'Research'), (3, 'Empty');
insert into emp values
    (1, 'Ann', 1, 5000, null),
    (2, 'bob', 1, 4000, 1),
    (3, 'Cid', 2, 6000, 1),
    (4, 'dee', 2, 6000, 3),
    (5, 'Eve', null, 3000, 1);
go
select * from emp where salary > 4000 order by id;
select name from emp where dept_id = 2 and salary >= 6000 order by name desc;
select name from emp where name = 'ANN';
select name from emp where name like 'b%' or name like '_ee';
select name from emp where name like '[a-c]%' order by name;
select name from emp where name like '[^a-c]%' order by name;
select name from emp where salary between 4000 and 5000 order by salary;
select name from emp where dept_id in (1, 3) order by id;
select name from emp where dept_id not in (1, 3) order by id;
select name from emp where dept_id is null;
select name from emp where boss is not null and dept_id is not null order by id;
go
-- ORDER BY alias, position, expression not selected; TOP, PERCENT, WITH TIES; paging.
select name as who, salary from emp order by who;
select name, salary from emp order by 2 desc, 1;
select name from emp order by salary desc, id;
select top 2 name from emp order by salary desc, id;
select top 40 percent name from emp order by id;
select top 1 with ties name, salary from emp order by salary desc;
select name from emp order by id offset 1 rows fetch next 2 rows only;
select name from emp order by id offset 4 rows;
select distinct dept_id from emp order by dept_id;
select count(distinct dept_id) as depts, count(dept_id) as with_dept, count(*) as all_rows from emp;
go
-- Grouping.
select dept_id, count(*) as n, sum(salary) as total, avg(salary) as mean, min(name) as first_name, max(salary) as top_pay
from emp group by dept_id order by dept_id;
select dept_id, count(*) as n from emp group by dept_id having count(*) > 1 order by dept_id;
select sum(salary) as total, avg(salary) as mean from emp where id > 100;
select count(*) as none from emp where id > 100;
select avg(id) as int_avg, avg(cast(id as decimal(5,2))) as dec_avg from emp;
go
-- Joins.
select e.name, d.name as dept from emp e join dept d on d.id = e.dept_id order by e.id;
select e.name, d.name as dept from emp e left join dept d on d.id = e.dept_id order by e.id;
select d.name, e.name from emp e right join dept d on d.id = e.dept_id order by d.id, e.id;
select d.name, e.name from emp e full join dept d on d.id = e.dept_id order by d.id, e.id;
select count(*) as pairs from emp cross join dept;
select e.name, b.name as boss from emp e join emp b on b.id = e.boss order by e.id;
select e.name from emp e, dept d where d.id = e.dept_id and d.name = 'Research' order by e.name;
select d.name, count(e.id) as staff from dept d left join emp e on e.dept_id = d.id group by d.name order by d.name;
go
-- Subqueries.
select name from emp where salary = (select max(salary) from emp) order by id;
select name, (select name from dept where id = emp.dept_id) as dept from emp order by id;
select name from dept d where exists (select * from emp e where e.dept_id = d.id) order by id;
select name from dept d where not exists (select * from emp e where e.dept_id = d.id);
select name from emp where dept_id in (select id from dept where name like 'R%');
select name from emp where dept_id not in (select dept_id from emp where id = 5);
select name from emp where salary > all (select salary from emp where dept_id = 1) order by id;
select name from emp where salary < any (select salary from emp where dept_id = 2) order by id;
select x.dept_id, x.total from (select dept_id, sum(salary) as total from emp group by dept_id) as x where x.total > 5000 order by 1;
select name from emp where salary = (select salary from emp where dept_id = 2);
go
-- Set operations.
select dept_id from emp union select id from dept order by 1;
select dept_id from emp union all select id from dept;
select id from dept except select dept_id from emp;
select id from dept intersect select dept_id from emp order by id;
select name from emp where id = 1 union select 'literal' order by name;
go
-- Common table expressions.
with rich as (select * from emp where salary >= 5000),
     named as (select r.name, d.name as dept from rich r join dept d on d.id = r.dept_id)
select * from named order by name;
with counts (dept, n) as (select dept_id, count(*) from emp group by dept_id)
select dept, n from counts where n > 1;
go
-- CASE, ROW_NUMBER, NULL logic, collation.
select name,
       case when salary >= 6000 then 'high' when salary >= 4000 then 'mid' else 'low' end as band,
       case dept_id when 1 then 'S' when 2 then 'R' end as code
from emp order by id;
select name, row_number() over (partition by dept_id order by salary desc, id) as rn from emp order by dept_id, rn;
select case when null = null then 'equal' else 'unknown' end as nulls,
       case when 'abc' = 'ABC  ' then 'same' else 'different' end as collation,
       case when 'é' = 'e' then 'same' else 'different' end as accents;
select count(*) from emp where not (dept_id = 1);
select null + 1 as n, 'a' + null as s, coalesce(null, null, 'third') as c, isnull(null, 5) as i, nullif(1, 1) as ni, iif(1 > 2, 'y', 'n') as f;
go
-- Errors.
select nosuch from emp;
go
select e.name from emp e join dept d on d.id = x.dept_id;
go
select id from emp join dept on dept.id = emp.dept_id;
go
select name from emp where salary = (select salary from emp);
go
select dept_id, name from emp group by dept_id;
go
select top 2 with ties name from emp;
go
select distinct name from emp order by salary;
go
select name from emp union select id, name from dept;
go
select 1 as a union select 2, 3;
go
select name from emp where count(*) > 1;
go
select * from nowhere;
go
