-- The catalog procedures ODBC and JDBC drivers read a database's shape from, with
-- SQL Server's result columns (ODBC 3): sp_tables, sp_columns[_100], sp_pkeys, sp_fkeys,
-- sp_statistics[_100], sp_special_columns[_100], sp_stored_procedures,
-- sp_sproc_columns[_100] and sp_datatype_info[_100].
create table parents (id int primary key, code char(3) not null unique, label varchar(20) null);
create table children (
    id bigint identity primary key,
    parent_id int not null references parents (id) on delete cascade,
    note nvarchar(max) null,
    amount decimal(12, 2) not null default 0,
    at datetime2(3) null
);
create index ix_children_parent on children (parent_id desc);
go
create view parent_codes as select id, code from parents;
go
create procedure add_one @x int, @y int output as begin set @y = @x + 1; return 7; end;
go
create function twice (@v decimal(10, 2)) returns decimal(12, 2) as begin return @v * 2; end;
go
exec sp_tables @table_owner = 'dbo';
exec sp_tables 'p%', 'dbo', null, '''VIEW''';
exec sp_columns children;
exec sp_columns_100 'children', 'dbo', null, 'a%';
go
exec sp_pkeys children;
exec sp_pkeys @table_name = 'parents', @table_owner = 'dbo';
exec sp_fkeys @fktable_name = 'children';
exec sp_fkeys parents;
exec sp_fkeys;
go
exec sp_statistics children;
exec sp_statistics_100 'parents', @is_unique = 'Y';
exec sp_special_columns children;
exec sp_special_columns_100 parents, @col_type = 'V';
go
exec sp_stored_procedures;
exec sp_sproc_columns add_one;
exec sp_sproc_columns_100 'twice';
go
exec sp_datatype_info 4;
exec sp_datatype_info_100 @data_type = -9;
exec sp_tables 'x', 'dbo', 'no_such_database';
go
exec sp_server_info;
exec sp_server_info @attribute_id = 18;
exec sp_server_info 500;
go
