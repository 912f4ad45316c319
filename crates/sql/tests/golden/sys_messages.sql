-- sys.messages: the error catalog, one row for every error and message number tessera
-- raises, with its severity and its template (us_english, language 1033).
SELECT message_id, severity, text FROM sys.messages WHERE message_id IN (102, 208, 1205, 2627) ORDER BY message_id;
GO
SELECT CASE WHEN COUNT(*) > 250 THEN 'more than 250' ELSE 'too few' END AS messages,
       CASE WHEN COUNT(*) = COUNT(DISTINCT message_id) THEN 'unique' ELSE 'duplicates' END AS numbers
FROM sys.messages;
SELECT COUNT(*) AS other_languages FROM sys.messages WHERE language_id <> 1033;
GO
-- messages of severity 19 and above are written to the error log
SELECT message_id, severity, is_event_logged FROM sys.messages WHERE severity >= 19 OR message_id = 8134 ORDER BY message_id;
SELECT COUNT(*) AS logged_below_19 FROM sys.messages WHERE is_event_logged = 1 AND severity < 19;
GO
-- the text of an error caught
DECLARE @x int;
BEGIN TRY
    SET @x = 1 / 0;
END TRY
BEGIN CATCH
    SELECT m.message_id, m.severity, CAST(m.text AS nvarchar(40)) AS text, CAST(ERROR_MESSAGE() AS nvarchar(40)) AS raised
    FROM sys.messages m WHERE m.message_id = ERROR_NUMBER();
END CATCH;
GO
-- visible from every database, and through a three-part name
CREATE DATABASE msgs;
GO
USE msgs;
SELECT CAST(text AS nvarchar(40)) AS text FROM sys.messages WHERE message_id = 208;
SELECT CASE WHEN COUNT(*) = (SELECT COUNT(*) FROM sys.messages) THEN 'all match' ELSE 'mismatch' END AS master
FROM sys.messages a JOIN master.sys.messages b ON b.message_id = a.message_id AND b.text = a.text;
SELECT CASE WHEN (SELECT COUNT(*) FROM sys.messages) = (SELECT COUNT(*) FROM tempdb.sys.messages) THEN 'same' ELSE 'different' END AS tempdb;
USE master;
DROP DATABASE msgs;
GO
