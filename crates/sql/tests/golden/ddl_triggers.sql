-- DDL triggers: ON DATABASE for event types and groups, EVENTDATA() read with value(),
-- a ROLLBACK that undoes the definition (3609), ENABLE/DISABLE, DROP, the catalog, and
-- the errors (1084, 40532).
CREATE TABLE ddl_log (seq int IDENTITY PRIMARY KEY, event_type nvarchar(64), schema_name nvarchar(128),
                      object_name nvarchar(128), object_type nvarchar(64), command nvarchar(400));
GO
CREATE TRIGGER audit_ddl ON DATABASE
FOR DDL_TABLE_EVENTS, DDL_VIEW_EVENTS, CREATE_PROCEDURE, DROP_PROCEDURE
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @e nvarchar(max) = EVENTDATA();
    INSERT INTO ddl_log (event_type, schema_name, object_name, object_type, command)
    VALUES (@e.value('(/EVENT_INSTANCE/EventType)[1]', 'nvarchar(64)'),
            @e.value('(/EVENT_INSTANCE/SchemaName)[1]', 'nvarchar(128)'),
            @e.value('(/EVENT_INSTANCE/ObjectName)[1]', 'nvarchar(128)'),
            @e.value('(/EVENT_INSTANCE/ObjectType)[1]', 'nvarchar(64)'),
            @e.value('(/EVENT_INSTANCE/TSQLCommand/CommandText)[1]', 'nvarchar(400)'));
END
GO
CREATE TABLE dbo.widgets (id int PRIMARY KEY, name varchar(20));
ALTER TABLE widgets ADD price money NULL;
GO
CREATE VIEW dbo.cheap_widgets AS SELECT id, name FROM widgets WHERE price < 5;
GO
CREATE PROCEDURE list_widgets AS SELECT id, name FROM widgets;
GO
DROP PROCEDURE list_widgets;
DROP VIEW cheap_widgets;
CREATE INDEX ix_widgets_name ON widgets (name);
SELECT seq, event_type, schema_name, object_name, object_type, command FROM ddl_log ORDER BY seq;
GO
-- A guard: dropping a table is rolled back, and the batch ends (3609).
CREATE TRIGGER no_drops ON DATABASE FOR DROP_TABLE
AS
BEGIN
    PRINT 'Tables are not dropped here.';
    ROLLBACK;
END
GO
DROP TABLE widgets;
SELECT 'not reached' AS x;
GO
SELECT CASE WHEN OBJECT_ID('widgets') IS NULL THEN 0 ELSE 1 END AS still_there, @@TRANCOUNT AS trancount;
GO
-- Disabled, it lets the drop through.
DISABLE TRIGGER no_drops ON DATABASE;
CREATE TABLE scratch (id int);
DROP TABLE scratch;
ENABLE TRIGGER no_drops ON DATABASE;
SELECT name, parent_class, parent_class_desc, parent_id, is_disabled FROM sys.triggers ORDER BY name;
SELECT OBJECTPROPERTY(OBJECT_ID('audit_ddl'), 'IsTrigger') AS is_trigger;
-- Outside a DDL trigger EVENTDATA() is NULL.
SELECT EVENTDATA() AS no_event;
GO
-- Errors: an unknown event type (1084), a server-level trigger (40532).
CREATE TRIGGER bad ON DATABASE FOR CREATE_WIDGET AS PRINT 1;
GO
CREATE TRIGGER bad ON ALL SERVER FOR CREATE_LOGIN AS PRINT 1;
GO
DROP TRIGGER no_drops ON DATABASE;
DROP TRIGGER audit_ddl ON DATABASE;
DROP TABLE widgets;
SELECT COUNT(*) AS ddl_triggers_left FROM sys.triggers WHERE parent_class = 0;
GO
