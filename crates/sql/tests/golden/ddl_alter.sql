-- ALTER TABLE: ADD/DROP COLUMN and CONSTRAINT, ALTER COLUMN.
CREATE TABLE emp (id int NOT NULL, name varchar(20) NOT NULL);
INSERT INTO emp VALUES (1, 'Ann'), (2, 'Bob');
GO
-- A batch is compiled before it runs: new columns are visible only in later batches.
ALTER TABLE emp ADD dept varchar(10) NULL;
SELECT dept FROM emp;
GO
ALTER TABLE emp ADD dept varchar(10) NULL;
ALTER TABLE emp ADD salary int NOT NULL CONSTRAINT df_salary DEFAULT 1000, bonus int NULL;
GO
SELECT id, name, dept, salary, bonus FROM emp ORDER BY id;
GO
ALTER TABLE emp ADD code int NOT NULL;
GO
ALTER TABLE emp ADD name int;
GO
ALTER TABLE emp ADD CONSTRAINT pk_emp PRIMARY KEY (id);
GO
INSERT INTO emp (id, name) VALUES (1, 'Dup');
GO
ALTER TABLE emp ADD CONSTRAINT ck_salary CHECK (salary > 0);
GO
UPDATE emp SET salary = 0 WHERE id = 1;
SELECT id, salary FROM emp ORDER BY id;
GO
ALTER TABLE emp ADD CONSTRAINT uq_name UNIQUE (name);
GO
INSERT INTO emp (id, name) VALUES (3, 'Ann');
SELECT COUNT(*) AS n FROM emp;
GO
ALTER TABLE emp DROP CONSTRAINT uq_name;
GO
INSERT INTO emp (id, name) VALUES (3, 'Ann');
SELECT COUNT(*) AS n FROM emp;
GO
ALTER TABLE emp DROP CONSTRAINT no_such_constraint;
GO
ALTER TABLE emp DROP COLUMN bonus;
SELECT * FROM emp ORDER BY id;
GO
ALTER TABLE emp DROP COLUMN no_such_column;
GO
ALTER TABLE emp DROP CONSTRAINT ck_salary;
ALTER TABLE emp DROP CONSTRAINT df_salary;
ALTER TABLE emp DROP COLUMN salary;
SELECT * FROM emp ORDER BY id;
GO
ALTER TABLE emp ALTER COLUMN dept varchar(30) NULL;
GO
UPDATE emp SET dept = 'engineering and research' WHERE id = 1;
SELECT id, dept FROM emp ORDER BY id;
GO
ALTER TABLE emp ADD CONSTRAINT df_dept DEFAULT 'none' FOR dept;
GO
INSERT INTO emp (id, name) VALUES (4, 'Eve');
SELECT id, dept FROM emp WHERE id = 4;
GO
ALTER TABLE no_such_table ADD x int;
GO
-- Foreign keys added later
CREATE TABLE dept (code varchar(30) PRIMARY KEY);
INSERT INTO dept VALUES ('none');
ALTER TABLE emp ADD CONSTRAINT fk_emp_dept FOREIGN KEY (dept) REFERENCES dept (code);
GO
INSERT INTO dept VALUES ('engineering and research');
GO
ALTER TABLE emp ADD CONSTRAINT fk_emp_dept FOREIGN KEY (dept) REFERENCES dept (code);
GO
INSERT INTO emp (id, name, dept) VALUES (5, 'Fay', 'sales');
SELECT COUNT(*) AS n FROM emp;
GO
ALTER TABLE emp DROP CONSTRAINT fk_emp_dept;
GO
INSERT INTO emp (id, name, dept) VALUES (5, 'Fay', 'sales');
SELECT COUNT(*) AS n FROM emp;
GO
-- Columns that indexes and constraints depend on
ALTER TABLE emp DROP COLUMN id;
GO
CREATE INDEX ix_emp_name ON emp (name);
GO
ALTER TABLE emp DROP COLUMN name;
GO
ALTER TABLE emp ALTER COLUMN name varchar(40) NOT NULL;
GO
DROP INDEX ix_emp_name ON emp;
ALTER TABLE emp ALTER COLUMN name varchar(40) NOT NULL;
GO
SELECT name, max_length FROM sys.columns WHERE object_id = OBJECT_ID('emp') AND name = 'name';
GO
-- Constraint definitions that fail
ALTER TABLE emp ADD CONSTRAINT pk_emp2 PRIMARY KEY NONCLUSTERED (name);
GO
ALTER TABLE emp ADD CONSTRAINT uq_emp_name UNIQUE (name);
GO
ALTER TABLE emp ADD CONSTRAINT pk_emp UNIQUE (dept);
GO
ALTER TABLE emp ADD CONSTRAINT uq_nope UNIQUE (nope);
GO
ALTER TABLE emp ADD CONSTRAINT ck_id CHECK (id > 0);
INSERT INTO emp (id, name) VALUES (-1, 'Neg');
GO
SELECT COUNT(*) AS n FROM emp WHERE id < 0;
GO
-- An indexed varchar, nvarchar or varbinary column may keep its type or grow (not shrink,
-- not a primary key's), as SQL Server allows.
create table ix_alter (id int primary key, name nvarchar(50) not null, code varchar(10) null);
create index ix_alter_name on ix_alter (name);
create unique index ix_alter_code on ix_alter (code);
insert ix_alter values (1, N'a', 'x');
alter table ix_alter alter column name nvarchar(50) not null;
alter table ix_alter alter column name nvarchar(100) not null;
alter table ix_alter alter column code varchar(20) null;
select name, code, columnproperty(object_id('ix_alter'), 'name', 'Precision') as name_len from ix_alter where name = N'a';
go
alter table ix_alter alter column name nvarchar(10) not null;
go
alter table ix_alter alter column id bigint not null;
go
drop table ix_alter;
go
