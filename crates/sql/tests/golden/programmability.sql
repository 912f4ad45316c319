-- A tenant-style schema: tables with keys, checks and defaults; procedures that call each
-- other inside transactions; TRY/CATCH that rolls back; OUTPUT parameters; and catalog
-- queries that list it all back.
create database tenant1;
go
use tenant1;
go
create table customers (
    id int identity primary key,
    email varchar(60) not null constraint uq_customers_email unique,
    credit decimal(10,2) not null constraint df_customers_credit default 0 constraint ck_customers_credit check (credit >= 0)
);
create table orders (
    id int identity primary key,
    customer_id int not null constraint fk_orders_customers references customers (id),
    amount decimal(10,2) not null constraint ck_orders_amount check (amount > 0),
    created datetime not null default '2026-01-01'
);
create index ix_orders_customer on orders (customer_id);
go
create procedure add_customer @email varchar(60), @id int output
as
begin
    set nocount on;
    insert into customers (email) values (@email);
    set @id = scope_identity();
end
go
create procedure add_credit @customer int, @amount decimal(10,2)
as
begin
    set nocount on;
    update customers set credit = credit + @amount where id = @customer;
    if @@rowcount = 0
    begin
        raiserror('customer %d not found', 16, 1, @customer);
        return 1;
    end
    return 0;
end
go
create procedure place_order @customer int, @amount decimal(10,2), @order int output
as
begin
    set nocount on;
    begin try
        begin tran;
        declare @rc int;
        exec @rc = add_credit @customer, @amount;
        if @rc <> 0 throw 50001, 'no such customer', 1;
        update customers set credit = credit - 2 * @amount where id = @customer;
        insert into orders (customer_id, amount) values (@customer, @amount);
        set @order = scope_identity();
        commit;
        return 0;
    end try
    begin catch
        if @@trancount > 0 rollback;
        print 'place_order failed: ' + error_message() + ' (' + cast(error_number() as varchar(10)) + ')';
        return error_number();
    end catch
end
go
declare @c1 int, @c2 int, @o int, @rc int;
exec add_customer 'ann@example.com', @c1 output;
exec add_customer @email = 'bob@example.com', @id = @c2 output;
exec add_credit @c1, 100;
exec @rc = place_order @c1, 30, @o output;
select @rc as rc, @o as order_id;
exec @rc = place_order @c2, 10, @o output;
select @rc as rc_credit_check;
exec @rc = place_order 99, 10, @o output;
select @rc as rc_missing;
select @@trancount as open_transactions;
select c.email, c.credit, count(o.id) as orders from customers c left join orders o on o.customer_id = c.id group by c.email, c.credit order by c.email;
go
exec add_customer 'ann@example.com';
go
-- The catalog lists it back.
select name, type_desc from sys.objects where type in ('U', 'P') order by type, name;
select o.name as proc_name, p.name as parameter, p.is_output from sys.parameters p join sys.procedures o on o.object_id = p.object_id order by o.name, p.parameter_id;
select name, delete_referential_action_desc from sys.foreign_keys;
select name, definition from sys.check_constraints order by name;
select name, definition from sys.default_constraints order by name;
select t.name as table_name, i.name as index_name, i.type_desc, i.is_unique, i.is_primary_key from sys.indexes i join sys.tables t on t.object_id = i.object_id order by t.name, i.index_id;
select routine_name, routine_type from information_schema.routines order by routine_name;
select table_name, column_name, data_type, is_nullable from information_schema.columns where table_name = 'orders' order by ordinal_position;
select object_name(object_id('place_order')) as found, case when object_id('place_order', 'P') is not null then 'proc' end as kind;
select left(definition, 40) as starts_with from sys.sql_modules where object_id = object_id('add_credit');
go
use master;
drop database tenant1;
go
