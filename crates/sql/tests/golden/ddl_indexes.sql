-- CREATE / DROP INDEX.
CREATE TABLE books (id int NOT NULL, isbn char(13), title varchar(40), year smallint);
INSERT INTO books VALUES (1, '9780000000001', 'Alpha', 2001), (2, '9780000000002', 'Beta', 2001), (3, NULL, 'Gamma', 2005);
GO
CREATE UNIQUE CLUSTERED INDEX cx_books_id ON books (id);
CREATE UNIQUE NONCLUSTERED INDEX ux_books_isbn ON books (isbn);
CREATE INDEX ix_books_year ON books (year DESC, title) INCLUDE (isbn);
CREATE NONCLUSTERED INDEX ix_books_title ON dbo.books (title);
GO
SELECT name, type_desc, is_unique FROM sys.indexes WHERE object_id = OBJECT_ID('books') ORDER BY index_id;
GO
SELECT title FROM books WHERE year = 2001 ORDER BY title;
SELECT id FROM books WHERE isbn = '9780000000002';
GO
INSERT INTO books VALUES (4, '9780000000001', 'Delta', 2010);
GO
INSERT INTO books VALUES (1, '9780000000004', 'Delta', 2010);
GO
INSERT INTO books VALUES (4, NULL, 'Delta', 2010);
GO
UPDATE books SET isbn = '9780000000002' WHERE id = 1;
SELECT id, isbn FROM books ORDER BY id;
GO
CREATE INDEX ix_books_year ON books (title);
GO
CREATE INDEX ix_bad ON books (nope);
GO
CREATE UNIQUE INDEX ux_books_year ON books (year);
SELECT COUNT(*) AS n FROM sys.indexes WHERE name = 'ux_books_year';
GO
DROP INDEX ix_books_title ON books;
DROP INDEX books.ix_books_year;
SELECT name FROM sys.indexes WHERE object_id = OBJECT_ID('books') ORDER BY index_id;
GO
DROP INDEX ix_books_title ON books;
GO
DROP INDEX IF EXISTS ix_books_title ON books;
GO
DROP INDEX ux_books_isbn ON books;
ALTER TABLE books DROP COLUMN isbn;
SELECT * FROM books ORDER BY id;
GO
-- Filtered indexes: only the rows the predicate holds true for have entries (a unique
-- one allows any number of the others: Knex's unique(), Hibernate's unique nullable
-- column), kept so by INSERT, UPDATE and DELETE, built over existing rows, checked by
-- CHECKDB; the predicate as SQL Server stores it in sys.indexes.
create table members (id int identity primary key, email varchar(50) null, name varchar(20), active bit not null default 1);
insert members (email, name) values (null, 'a'), (null, 'b'), ('x@y', 'c'), ('x@y', 'd');
go
create unique index ux_members_email on members (email) where email is not null;
go
delete members where name = 'd';
create unique index ux_members_email on members (email) where email is not null;
create index ix_members_active_name on members (name) where active = 1 and name > 'a';
go
insert members (email, name) values ('x@y', 'e');
go
update members set email = 'x@y' where name = 'a';
go
update members set email = 'z@y' where name = 'a';
update members set email = null where name = 'c';
update members set active = 0 where name = 'b';
insert members (email, name) values ('x@y', 'e'), (null, 'f');
delete members where name = 'f';
select name, email, active from members order by id;
select name, has_filter, filter_definition from sys.indexes where object_id = object_id('members') and index_id > 1 order by name;
select name, email from members where email = 'x@y';
dbcc checkdb with no_infomsgs;
go
-- A query whose WHERE has the index's filter reads the filtered index; one without it
-- does not (the index lacks rows it wants).
set showplan_text on;
go
select name from members where email = 'x@y' and email is not null;
select name from members where name = 'b' and active = 1;
select name from members where name = 'b';
go
set showplan_text off;
go
select name from members where email = 'x@y' and email is not null;
select name from members where name = 'b' and active = 1;
select name from members where active = 1 order by name;
go
create index ix_bad on members (name) where nosuch > 1;
go
create clustered index cx_members on members (name) where active = 1;
go
drop table members;
go
-- Refused with a clear error: indexes on views (indexed views), user-defined types.
CREATE TABLE iv_base (id int PRIMARY KEY, v int);
GO
CREATE VIEW dbo.iv_view WITH SCHEMABINDING AS SELECT id, v FROM dbo.iv_base;
GO
CREATE UNIQUE CLUSTERED INDEX ix_iv ON dbo.iv_view (id);
GO
CREATE TYPE dbo.Phone FROM varchar(20) NOT NULL;
GO
DROP VIEW dbo.iv_view;
DROP TABLE iv_base;
GO
