-- T-SQL cursors: DECLARE CURSOR with SQL Server's options and the ISO form, OPEN,
-- FETCH in every direction INTO variables and as result sets, @@FETCH_STATUS,
-- @@CURSOR_ROWS, CURSOR_STATUS, WHERE CURRENT OF, CLOSE, DEALLOCATE, LOCAL and
-- GLOBAL scope, cursor variables, and their errors.
SET NOCOUNT ON;
CREATE TABLE items (id int PRIMARY KEY, name varchar(20) NOT NULL, qty int NOT NULL);
INSERT INTO items VALUES (1, 'apple', 10), (2, 'pear', 0), (3, 'plum', 7), (4, 'fig', 3);
GO
-- The classic loop: LOCAL FAST_FORWARD, FETCH NEXT INTO, WHILE @@FETCH_STATUS = 0.
DECLARE @id int, @name varchar(20), @qty int, @total int = 0, @names varchar(100) = '';
DECLARE c CURSOR LOCAL FAST_FORWARD FOR SELECT id, name, qty FROM items WHERE qty > 0 ORDER BY id;
SELECT @@CURSOR_ROWS AS rows_before_open, CURSOR_STATUS('local', 'c') AS declared;
OPEN c;
SELECT @@CURSOR_ROWS AS fast_forward_rows, CURSOR_STATUS('local', 'c') AS opened;
FETCH NEXT FROM c INTO @id, @name, @qty;
WHILE @@FETCH_STATUS = 0
BEGIN
    SET @total += @qty;
    SET @names += @name + ';';
    FETCH NEXT FROM c INTO @id, @name, @qty;
END
SELECT @total AS total, @names AS names, @@FETCH_STATUS AS fetch_status;
CLOSE c;
SELECT CURSOR_STATUS('local', 'c') AS closed;
DEALLOCATE c;
SELECT CURSOR_STATUS('local', 'c') AS deallocated;
GO
-- A LOCAL cursor goes with its batch.
SELECT CURSOR_STATUS('local', 'c') AS next_batch;
GO
-- SCROLL cursors: every direction, rows as result sets.
DECLARE s CURSOR SCROLL STATIC FOR SELECT id, name FROM items ORDER BY id;
OPEN s;
SELECT @@CURSOR_ROWS AS static_rows;
FETCH LAST FROM s;
FETCH PRIOR FROM s;
FETCH FIRST FROM s;
FETCH ABSOLUTE 3 FROM s;
FETCH RELATIVE -2 FROM s;
FETCH ABSOLUTE -1 FROM s;
FETCH NEXT FROM s;
SELECT @@FETCH_STATUS AS past_the_end;
FETCH PRIOR FROM s;
CLOSE s;
DEALLOCATE s;
GO
-- A global cursor (the default) outlives its batch.
DECLARE g CURSOR FOR SELECT name FROM items WHERE id = 2;
GO
OPEN g;
DECLARE @n varchar(20);
FETCH g INTO @n;
SELECT @n AS fetched_in_later_batch, CURSOR_STATUS('global', 'g') AS global_status;
CLOSE GLOBAL g;
DEALLOCATE GLOBAL g;
GO
-- Variables are read when the cursor is declared, not when it opens.
DECLARE @min int = 5;
DECLARE v CURSOR LOCAL STATIC FOR SELECT id FROM items WHERE qty >= @min ORDER BY id;
SET @min = 0;
OPEN v;
SELECT @@CURSOR_ROWS AS rows_with_min_5;
CLOSE v;
DEALLOCATE v;
GO
-- WHERE CURRENT OF: a keyed cursor updates and deletes the row it is on.
DECLARE u CURSOR LOCAL FOR SELECT id, qty FROM items ORDER BY id FOR UPDATE OF qty;
DECLARE @id int, @qty int;
OPEN u;
FETCH NEXT FROM u INTO @id, @qty;
WHILE @@FETCH_STATUS = 0
BEGIN
    IF @qty = 0
        DELETE FROM items WHERE CURRENT OF u;
    ELSE
        UPDATE items SET qty = qty * 10 WHERE CURRENT OF u;
    FETCH NEXT FROM u INTO @id, @qty;
END
CLOSE u;
DEALLOCATE u;
SELECT id, name, qty FROM items ORDER BY id;
GO
-- FOR UPDATE OF limits the columns (16932); a read-only cursor refuses (16929).
DECLARE u CURSOR LOCAL FOR SELECT id, name FROM items FOR UPDATE OF qty;
OPEN u;
FETCH NEXT FROM u;
UPDATE items SET name = 'x' WHERE CURRENT OF u;
GO
DECLARE r CURSOR LOCAL STATIC FOR SELECT id FROM items;
OPEN r;
FETCH NEXT FROM r;
UPDATE items SET qty = 0 WHERE CURRENT OF r;
GO
-- A keyset cursor sees current values, and a row deleted since it opened is -2.
DECLARE k CURSOR LOCAL KEYSET FOR SELECT id, qty FROM items ORDER BY id;
OPEN k;
SELECT @@CURSOR_ROWS AS keyset_rows;
UPDATE items SET qty = 99 WHERE id = 1;
DELETE FROM items WHERE id = 3;
FETCH NEXT FROM k;
FETCH NEXT FROM k;
SELECT @@FETCH_STATUS AS deleted_row;
FETCH NEXT FROM k;
CLOSE k;
DEALLOCATE k;
GO
-- Cursor variables: SET @c = CURSOR …, assigned from another, CURSOR_STATUS('variable').
DECLARE @c CURSOR, @d CURSOR;
SELECT CURSOR_STATUS('variable', '@c') AS unassigned;
SET @c = CURSOR LOCAL FORWARD_ONLY STATIC FOR SELECT name FROM items ORDER BY id DESC;
OPEN @c;
SET @d = @c;
FETCH NEXT FROM @d;
FETCH NEXT FROM @c;
SELECT CURSOR_STATUS('variable', '@c') AS open_status;
DEALLOCATE @c;
SELECT CURSOR_STATUS('variable', '@c') AS after_deallocate, CURSOR_STATUS('variable', '@d') AS other_variable;
CLOSE @d;
GO
-- A cursor in a procedure, over its parameter.
CREATE PROCEDURE list_over @min int AS
BEGIN
    DECLARE @name varchar(20), @out varchar(100) = '';
    DECLARE pc CURSOR LOCAL FOR SELECT name FROM items WHERE qty > @min ORDER BY name;
    OPEN pc;
    FETCH NEXT FROM pc INTO @name;
    WHILE @@FETCH_STATUS = 0
    BEGIN
        SET @out += @name + ' ';
        FETCH NEXT FROM pc INTO @name;
    END
    CLOSE pc;
    DEALLOCATE pc;
    SELECT @out AS names_over;
END
GO
EXEC list_over 20;
EXEC list_over 0;
GO
-- Errors.
DECLARE e CURSOR LOCAL FOR SELECT id FROM items;
DECLARE e CURSOR LOCAL FOR SELECT id FROM items;
FETCH NEXT FROM e;
OPEN e;
OPEN e;
FETCH FIRST FROM e;
DECLARE @a int, @b int;
FETCH NEXT FROM e INTO @a, @b;
OPEN nosuch;
GO
DECLARE x CURSOR FORWARD_ONLY SCROLL FOR SELECT id FROM items;
GO
DECLARE x CURSOR LOCAL FAST_FORWARD FOR SELECT id FROM items FOR UPDATE;
GO
DECLARE @i int = 1;
OPEN @i;
GO
DECLARE @c CURSOR;
OPEN @c;
GO
-- Cursor OUTPUT parameters: a procedure opens a cursor for its caller.
CREATE PROCEDURE open_names @min int, @result CURSOR VARYING OUTPUT AS
BEGIN
    SET @result = CURSOR LOCAL FORWARD_ONLY STATIC FOR SELECT name FROM items WHERE qty >= @min ORDER BY name;
    OPEN @result;
END
GO
DECLARE @names CURSOR, @name varchar(20), @all varchar(100) = '';
EXEC open_names 1, @names OUTPUT;
SELECT CURSOR_STATUS('variable', '@names') AS returned_open;
FETCH NEXT FROM @names INTO @name;
WHILE @@FETCH_STATUS = 0
BEGIN
    SET @all += @name + ' ';
    FETCH NEXT FROM @names INTO @name;
END
CLOSE @names;
DEALLOCATE @names;
SELECT @all AS names_from_procedure;
-- A cursor variable that already has a cursor cannot take one (16951).
SET @names = CURSOR FOR SELECT 1;
EXEC open_names 1, @names OUTPUT;
GO
