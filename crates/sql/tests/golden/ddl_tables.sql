-- CREATE / DROP TABLE: every type, nullability, defaults, keys, names.
CREATE TABLE all_types (
    c_bit bit, c_tiny tinyint, c_small smallint, c_int int, c_big bigint,
    c_dec decimal(9,2), c_num numeric(5), c_money money, c_float float, c_real real,
    c_char char(4), c_vchar varchar(10), c_nchar nchar(3), c_nvchar nvarchar(8),
    c_vmax varchar(max), c_nvmax nvarchar(max),
    c_bin binary(2), c_vbin varbinary(4), c_vbmax varbinary(max),
    c_date date, c_time time, c_dt datetime, c_dt2 datetime2, c_guid uniqueidentifier
);
GO
INSERT INTO all_types VALUES (1, 255, -32768, 2147483647, 9223372036854775807,
    1234567.89, 12345, 922337203685477.5807, 1.5, 2.5,
    'ab', 'hello', N'xy', N'wörld', 'big', N'bigger',
    0x0102, 0xCAFE, 0xDEADBEEF,
    '2024-02-29', '13:45:10', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.1234567',
    '6F9619FF-8B86-D011-B42D-00C04FC964FF');
INSERT INTO all_types (c_int) VALUES (NULL);
SELECT c_bit, c_tiny, c_small, c_int, c_big FROM all_types;
SELECT c_dec, c_num, c_money, c_float, c_real FROM all_types;
SELECT c_char + '|' AS c_char, c_vchar, c_nchar + N'|' AS c_nchar, c_nvchar FROM all_types;
SELECT c_bin, c_vbin, c_date, c_time FROM all_types;
SELECT c_dt, c_dt2, c_guid FROM all_types;
GO
SELECT name, system_type_id, max_length, [precision], scale, is_nullable
FROM sys.columns WHERE object_id = OBJECT_ID('all_types') AND name <> 'c_num' ORDER BY column_id;
GO
CREATE TABLE all_types (a int);
GO
CREATE TABLE [order details] ([order id] int NOT NULL, [select] varchar(10) NULL);
INSERT INTO [order details] ([order id], [select]) VALUES (1, 'kw');
SELECT [order id], [select] FROM [order details];
GO
CREATE TABLE dbo.qualified (a int);
INSERT INTO master.dbo.qualified VALUES (5);
SELECT a FROM master.dbo.qualified;
SELECT q.a FROM dbo.qualified AS q;
DROP TABLE master.dbo.qualified;
GO
CREATE TABLE nosuchschema.t (a int);
GO
CREATE TABLE defaults_t (
    id int NOT NULL,
    status varchar(10) NOT NULL DEFAULT 'new',
    qty int CONSTRAINT df_qty DEFAULT (1),
    note varchar(20) NULL
);
INSERT INTO defaults_t (id) VALUES (1);
INSERT INTO defaults_t (id, status, qty, note) VALUES (2, DEFAULT, DEFAULT, DEFAULT);
INSERT INTO defaults_t VALUES (3, 'old', NULL, 'n');
SELECT * FROM defaults_t ORDER BY id;
GO
INSERT INTO defaults_t (status) VALUES ('x');
SELECT COUNT(*) AS n FROM defaults_t;
GO
CREATE TABLE pk_col (id int PRIMARY KEY, v varchar(5));
CREATE TABLE pk_named (id int CONSTRAINT pk_named_id PRIMARY KEY NONCLUSTERED, v int);
CREATE TABLE pk_table (a int NOT NULL, b int NOT NULL, c int, CONSTRAINT pk_ab PRIMARY KEY CLUSTERED (a, b));
CREATE TABLE uq_table (a int, b int, CONSTRAINT uq_a UNIQUE (a), CONSTRAINT uq_b UNIQUE NONCLUSTERED (b));
GO
SELECT name, type_desc, is_unique, is_primary_key, is_unique_constraint
FROM sys.indexes WHERE object_id = OBJECT_ID('pk_table') OR object_id = OBJECT_ID('uq_table') OR object_id = OBJECT_ID('pk_named')
ORDER BY name;
GO
INSERT INTO pk_table VALUES (1, 1, 0), (1, 2, 0);
INSERT INTO pk_table VALUES (1, 2, 9);
SELECT a, b, c FROM pk_table;
GO
-- Primary key columns are NOT NULL even when not declared so
CREATE TABLE pk_implicit (a int, b varchar(5), CONSTRAINT pk_implicit_a PRIMARY KEY (a));
INSERT INTO pk_implicit (b) VALUES ('x');
SELECT name, is_nullable FROM sys.columns WHERE object_id = OBJECT_ID('pk_implicit') ORDER BY column_id;
GO
DROP TABLE pk_col, pk_named;
SELECT OBJECT_ID('pk_col') AS pk_col, OBJECT_ID('pk_named') AS pk_named;
GO
DROP TABLE no_such_table;
GO
DROP TABLE IF EXISTS no_such_table;
DROP TABLE IF EXISTS pk_table;
SELECT OBJECT_ID('pk_table') AS gone;
GO
SELECT * FROM no_such_table;
GO
SELECT no_such_column FROM uq_table;
GO
CREATE TABLE t_truncate (id int IDENTITY(1,1), v int);
INSERT INTO t_truncate (v) VALUES (10), (20), (30);
TRUNCATE TABLE t_truncate;
SELECT COUNT(*) AS n FROM t_truncate;
INSERT INTO t_truncate (v) VALUES (40);
SELECT id, v FROM t_truncate;
GO
TRUNCATE TABLE no_such_table;
GO
-- Defaults are stored as SQL Server writes them: a string unwrapped once, a negative
-- number as one constant, CURRENT_TIMESTAMP and the other niladic functions as the
-- functions they stand for; the table stays usable (INSERT, ALTER).
CREATE TABLE stamped (
    id int IDENTITY PRIMARY KEY,
    created datetime2 NOT NULL CONSTRAINT df_created DEFAULT CURRENT_TIMESTAMP,
    who sysname NOT NULL DEFAULT CURRENT_USER,
    login sysname NOT NULL DEFAULT SYSTEM_USER,
    status varchar(10) DEFAULT 'draft',
    delta int DEFAULT -1,
    flags binary(1) DEFAULT 0x0A,
    CONSTRAINT ck_status CHECK (status <> 'x' AND delta > -5)
);
INSERT INTO stamped DEFAULT VALUES;
ALTER TABLE stamped ADD note varchar(10) NULL;
SELECT id, CASE WHEN created > '2000-01-01' THEN 'now' END AS created, who, login, status, delta, flags FROM stamped;
SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'stamped' ORDER BY ordinal_position;
SELECT definition FROM sys.check_constraints WHERE name = 'ck_status';
DROP TABLE stamped;
GO
