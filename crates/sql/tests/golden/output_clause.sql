-- The OUTPUT clause: inserted and deleted rows as a result set.
CREATE TABLE tasks (id int IDENTITY(1,1) PRIMARY KEY, title varchar(20) NOT NULL, state varchar(10) DEFAULT 'open');
GO
INSERT INTO tasks (title) OUTPUT inserted.id, inserted.title, inserted.state VALUES ('write'), ('test');
GO
INSERT INTO tasks (title, state) OUTPUT inserted.* VALUES ('ship', 'blocked');
GO
INSERT INTO tasks (title) OUTPUT inserted.id AS new_id, inserted.title + '!' AS shout SELECT 'review';
GO
UPDATE tasks SET state = 'done' OUTPUT deleted.state AS was, inserted.state AS now, inserted.id WHERE id <= 2;
GO
UPDATE tasks SET title = title + '2' OUTPUT inserted.title WHERE 1 = 0;
GO
DELETE FROM tasks OUTPUT deleted.id, deleted.title WHERE state = 'blocked';
GO
DELETE FROM tasks OUTPUT deleted.* WHERE id = 4;
SELECT id, title, state FROM tasks ORDER BY id;
GO
UPDATE tasks SET title = 'x' OUTPUT nosuch.title;
GO
