-- Transactions: nesting, @@TRANCOUNT, savepoints, statement atomicity, XACT_ABORT,
-- IMPLICIT_TRANSACTIONS.
create table acct (id int primary key, balance int not null check (balance >= 0));
insert into acct values (1, 100), (2, 50);
go
select @@trancount as outside;
begin tran;
select @@trancount as one;
begin transaction inner_one;
select @@trancount as two;
commit;
select @@trancount as back_to_one;
update acct set balance = balance - 10 where id = 1;
commit tran;
select @@trancount as zero, balance from acct where id = 1;
go
-- Rollback undoes everything, whatever the nesting.
begin tran;
begin tran;
update acct set balance = 0;
rollback;
select @@trancount as after_rollback;
select * from acct;
go
-- Savepoints.
begin tran t1;
insert into acct values (3, 30);
save tran before_four;
insert into acct values (4, 40);
rollback tran before_four;
select @@trancount as still_open;
insert into acct values (5, 50);
commit tran t1;
select * from acct;
go
-- A failing statement inside a transaction is undone alone; the transaction goes on.
begin tran;
insert into acct values (6, 60), (1, 10);
select @@trancount as open_after_error;
insert into acct values (7, 70);
commit;
select * from acct;
go
-- A CHECK violation in a multi-row update leaves no row changed.
update acct set balance = balance - 60;
select * from acct;
go
commit;
rollback;
go
save tran nothing;
go
begin tran;
rollback tran no_such_name;
select @@trancount as after_bad_name;
rollback;
go
-- XACT_ABORT ON: an error rolls the transaction back and ends the batch.
set xact_abort on;
begin tran;
insert into acct values (8, 80);
insert into acct values (1, 1);
print 'not reached';
go
select @@trancount as after_xact_abort, count(*) as rows from acct;
set xact_abort off;
go
-- IMPLICIT_TRANSACTIONS ON: data changes open a transaction that stays open.
set implicit_transactions on;
insert into acct values (9, 90);
select @@trancount as implicit;
rollback;
set implicit_transactions off;
select count(*) as rows_after from acct where id = 9;
go
-- Delayed durability on commit.
alter database master set delayed_durability = allowed;
begin tran;
insert into acct values (10, 100);
commit with (delayed_durability = on);
select count(*) as delayed_row from acct where id = 10;
alter database master set delayed_durability = disabled;
go
-- SNAPSHOT isolation: refused where it first touches a database that does not allow it
-- (3952), never run as another level; tempdb's objects are the session's own. Once
-- ALLOW_SNAPSHOT_ISOLATION is on, the transaction reads the rows committed when it first
-- read the database; a transaction begun at another level cannot turn to SNAPSHOT (3951).
create table snap_t (a int);
insert snap_t values (1);
go
set transaction isolation level snapshot;
select a from snap_t;
go
set transaction isolation level read committed;
alter database current set allow_snapshot_isolation on;
select snapshot_isolation_state, snapshot_isolation_state_desc, is_read_committed_snapshot_on
from sys.databases where name = db_name();
go
set transaction isolation level snapshot;
begin tran;
select a from snap_t;
update snap_t set a = a + 1;
select a from snap_t;
commit;
go
set transaction isolation level read committed;
begin tran;
select a from snap_t;
set transaction isolation level snapshot;
select a from snap_t;
go
rollback;
set transaction isolation level read committed;
alter database current set allow_snapshot_isolation off;
go
set transaction isolation level snapshot;
select a from snap_t;
go
create table #snap (a int);
insert #snap values (2);
select a from #snap;
drop table #snap;
go
set transaction isolation level read committed;
select a from snap_t;
drop table snap_t;
go
