-- Logins and fixed server roles, as sa sees them (the TDS tests log in as them).
CREATE LOGIN app_user WITH PASSWORD = 'Str0ng!Pass', DEFAULT_DATABASE = master, CHECK_EXPIRATION = OFF;
CREATE LOGIN legacy WITH PASSWORD = 'legacy', CHECK_POLICY = OFF;
SELECT name, type, type_desc, is_disabled, default_database_name FROM sys.server_principals
WHERE name IN ('sa', 'app_user', 'legacy', 'sysadmin', 'public') ORDER BY principal_id;
SELECT name, is_policy_checked, is_expiration_checked, CASE WHEN password_hash IS NULL THEN 0 ELSE 1 END AS has_hash
FROM sys.sql_logins ORDER BY principal_id;
GO
CREATE LOGIN app_user WITH PASSWORD = 'Str0ng!Pass';
GO
CREATE LOGIN bad WITH PASSWORD = 'abc';
GO
CREATE LOGIN bad WITH PASSWORD = 'abcdefghij';
GO
CREATE LOGIN bad WITH PASSWORD = 'Str0ng!Pass', CHECK_POLICY = OFF, CHECK_EXPIRATION = ON;
GO
CREATE LOGIN bad WITH PASSWORD = 'Str0ng!Pass', DEFAULT_DATABASE = missing_db;
GO
CREATE LOGIN sysadmin WITH PASSWORD = 'Str0ng!Pass';
GO
CREATE LOGIN [CORP\someone] FROM WINDOWS;
GO
CREATE LOGIN x WITH PASSWORD = 'Str0ng!Pass' MUST_CHANGE, CHECK_EXPIRATION = ON;
GO
ALTER LOGIN app_user DISABLE;
ALTER SERVER ROLE dbcreator ADD MEMBER app_user;
SELECT name, is_disabled FROM sys.server_principals WHERE name = 'app_user';
SELECT r.name AS role_name, m.name AS member_name
FROM sys.server_role_members rm
JOIN sys.server_principals r ON r.principal_id = rm.role_principal_id
JOIN sys.server_principals m ON m.principal_id = rm.member_principal_id
ORDER BY r.name, m.name;
SELECT IS_SRVROLEMEMBER('dbcreator', 'app_user') AS dbc, IS_SRVROLEMEMBER('sysadmin', 'app_user') AS sa_role,
       IS_SRVROLEMEMBER('sysadmin') AS me, IS_SRVROLEMEMBER('no_such_role') AS unknown,
       SUSER_NAME(1) AS one, SUSER_SNAME(SUSER_SID('app_user')) AS by_sid;
GO
ALTER LOGIN app_user ENABLE;
ALTER LOGIN app_user WITH NAME = renamed_user, DEFAULT_DATABASE = tempdb;
SELECT name, is_disabled, default_database_name FROM sys.server_principals WHERE principal_id = SUSER_ID('renamed_user');
GO
ALTER LOGIN nobody ENABLE;
GO
ALTER SERVER ROLE sysadmin DROP MEMBER sa;
GO
ALTER SERVER ROLE no_role ADD MEMBER renamed_user;
GO
ALTER SERVER ROLE sysadmin ADD MEMBER nobody;
GO
BEGIN TRAN;
DROP LOGIN legacy;
GO
ROLLBACK;
DROP LOGIN legacy;
DROP LOGIN renamed_user;
SELECT COUNT(*) AS logins FROM sys.sql_logins;
GO
DROP LOGIN legacy;
GO
DROP LOGIN sa;
GO
-- Without VIEW SERVER STATE a server-wide DMV is refused (300, 297), not filtered; a
-- refused BACKUP or RESTORE is followed by 3013, as SQL Server's is.
create login lowly with password = 'Lowly-Passw0rd!', check_policy = off;
create user lowly for login lowly;
go
execute as login = 'lowly';
go
select count(*) as connections from sys.dm_exec_connections;
go
select count(*) as own_sessions from sys.dm_exec_sessions;
go
backup database master to disk = 'nowhere.bak';
go
restore database master from disk = 'nowhere.bak';
go
revert;
drop user lowly;
drop login lowly;
go
