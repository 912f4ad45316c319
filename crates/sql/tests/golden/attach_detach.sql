-- sp_detach_db, CREATE DATABASE … FOR ATTACH, sp_attach_db and their errors; sp_MSforeachdb.
CREATE DATABASE moveme;
GO
CREATE TABLE moveme.dbo.items (id int PRIMARY KEY, name varchar(20));
INSERT INTO moveme.dbo.items VALUES (1, 'pen'), (2, 'ink');
GO
EXEC sp_detach_db 'master';
EXEC sp_detach_db @dbname = 'tempdb';
EXEC sp_detach_db 'nosuchdb';
EXEC sp_detach_db;
GO
USE moveme;
EXEC sp_detach_db 'moveme';
USE master;
GO
DECLARE @data nvarchar(400) = (SELECT physical_name FROM sys.master_files WHERE database_id = DB_ID('moveme') AND type = 0);
DECLARE @log nvarchar(400) = (SELECT physical_name FROM sys.master_files WHERE database_id = DB_ID('moveme') AND type = 1);
EXEC sp_detach_db @dbname = N'moveme', @skipchecks = 'true';
SELECT COUNT(*) AS still_listed FROM sys.databases WHERE name = 'moveme';
SELECT * FROM moveme.dbo.items;
EXEC (N'CREATE DATABASE moved ON (FILENAME = ''' + @data + N'''), (FILENAME = ''' + @log + N''') FOR ATTACH');
SELECT * FROM moved.dbo.items;
INSERT INTO moved.dbo.items VALUES (3, 'nib');
EXEC (N'CREATE DATABASE moved ON (FILENAME = ''' + @data + N''') FOR ATTACH');
EXEC sp_detach_db 'moved', 'false';
EXEC sp_attach_db @dbname = N'moveme', @filename1 = @data, @filename2 = @log;
SELECT * FROM moveme.dbo.items;
GO
CREATE DATABASE ghost ON (FILENAME = '/nonexistent/dir/ghost.mdf') FOR ATTACH;
GO
CREATE DATABASE ghost ON (FILENAME = '/nonexistent/dir/ghost.mdf') FOR ATTACH_REBUILD_LOG;
GO
CREATE DATABASE ghost ON (NAME = g, FILENAME = '/nonexistent/g.mdf', SIZE = 10MB) FOR ATTACH;
GO
EXEC sp_attach_db N'ghost';
GO
-- sp_MSforeachdb: each ONLINE database in turn, ? replaced by its name
CREATE DATABASE t1;
CREATE DATABASE t2;
GO
EXEC sp_MSforeachdb N'IF ''?'' LIKE ''t[0-9]'' EXEC (''CREATE TABLE [?].dbo.tally (id int PRIMARY KEY)'')';
EXEC sp_MSforeachdb @command1 = N'IF ''?'' LIKE ''t[0-9]'' INSERT INTO [?].dbo.tally VALUES (1)',
    @command2 = N'IF ''?'' LIKE ''t[0-9]'' SELECT ''?'' AS db, COUNT(*) AS n FROM [?].dbo.tally',
    @precommand = N'PRINT ''before''', @postcommand = N'PRINT ''after''';
EXEC sp_MSforeachdb N'IF ''$'' LIKE ''t[0-9]'' SELECT COUNT(*) AS n FROM [$].dbo.nosuchtable', '$';
EXEC sp_MSforeachdb;
GO
