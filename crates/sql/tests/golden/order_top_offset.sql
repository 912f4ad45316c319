-- ORDER BY, TOP, OFFSET/FETCH.
CREATE TABLE scores (id int PRIMARY KEY, player varchar(10), score int, team char(1));
INSERT INTO scores VALUES (1,'ann',50,'a'),(2,'ben',70,'b'),(3,'cid',70,'a'),(4,'dan',90,'b'),(5,'eva',NULL,'a'),(6,'fay',30,'b'),(7,'gus',70,'a'),(8,'hal',10,'b');
GO
SELECT player, score FROM scores ORDER BY score, id;
SELECT player, score FROM scores ORDER BY score DESC, id ASC;
SELECT player AS p, score AS s FROM scores ORDER BY s DESC, p;
SELECT player, score FROM scores ORDER BY 2, 1;
SELECT player FROM scores ORDER BY score DESC, id;
SELECT player, score FROM scores ORDER BY team DESC, score + 0 DESC, player;
SELECT TOP 3 player, score FROM scores ORDER BY score DESC, id;
SELECT TOP (2) player FROM scores ORDER BY id;
SELECT TOP 0 player FROM scores ORDER BY id;
SELECT TOP 3 WITH TIES score FROM scores ORDER BY score DESC;
SELECT TOP 2 WITH TIES score, team FROM scores ORDER BY score DESC, team;
SELECT TOP 1 WITH TIES team FROM scores ORDER BY team;
SELECT TOP 25 PERCENT player FROM scores ORDER BY id;
SELECT TOP 30 PERCENT player FROM scores ORDER BY id;
SELECT TOP 100 PERCENT player FROM scores ORDER BY id DESC;
SELECT TOP 0 PERCENT player FROM scores ORDER BY id;
DECLARE @n int = 2;
SELECT TOP (@n) player FROM scores ORDER BY id DESC;
SELECT TOP (@n + 1) player FROM scores ORDER BY id;
GO
SELECT player FROM scores ORDER BY id OFFSET 2 ROWS;
SELECT player FROM scores ORDER BY id OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY;
SELECT player FROM scores ORDER BY id OFFSET 0 ROWS FETCH FIRST 1 ROW ONLY;
SELECT player FROM scores ORDER BY id OFFSET 100 ROWS;
SELECT player FROM scores ORDER BY id OFFSET 7 ROWS FETCH NEXT 5 ROWS ONLY;
DECLARE @skip int = 1, @take int = 2;
SELECT player FROM scores ORDER BY score DESC, id OFFSET @skip ROWS FETCH NEXT @take ROWS ONLY;
GO
-- NULLs sort first ascending, last descending
SELECT player, score FROM scores WHERE team = 'a' ORDER BY score, id;
SELECT player, score FROM scores WHERE team = 'a' ORDER BY score DESC, id;
GO
-- errors
SELECT TOP -1 player FROM scores;
GO
SELECT player FROM scores ORDER BY id OFFSET -1 ROWS;
GO
SELECT player FROM scores ORDER BY id OFFSET 0 ROWS FETCH NEXT 0 ROWS ONLY;
GO
DECLARE @n int = -2;
SELECT player FROM scores ORDER BY id OFFSET @n ROWS;
SELECT player FROM scores ORDER BY id OFFSET 1 ROWS FETCH NEXT @n ROWS ONLY;
SELECT 'same batch continues' AS ok;
GO
SELECT TOP 2 player FROM scores ORDER BY id OFFSET 1 ROWS;
GO
SELECT TOP 101 PERCENT player FROM scores ORDER BY id;
GO
SELECT player FROM scores ORDER BY 3;
GO
SELECT player FROM scores ORDER BY 0;
GO
SELECT DISTINCT player FROM scores ORDER BY score;
GO
-- A column the select list has under an alias is in it (TypeORM's paging query).
SELECT DISTINCT d.player AS who FROM (SELECT player, score FROM scores) d ORDER BY player DESC;
SELECT DISTINCT s.player AS who FROM scores s ORDER BY s.player OFFSET 1 ROWS FETCH NEXT 1 ROWS ONLY;
GO
SELECT TOP 2 WITH TIES player FROM scores;
GO
SELECT player FROM scores ORDER BY nosuch;
GO
SELECT 'after errors' AS ok;
GO
