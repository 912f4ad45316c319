-- Flyway versioned migration 1: two tables, a foreign key, a default and an index.
CREATE TABLE customers (
    id INT IDENTITY(1, 1) NOT NULL CONSTRAINT pk_customers PRIMARY KEY,
    name NVARCHAR(100) NOT NULL,
    email NVARCHAR(200) NULL,
    created_at DATETIME2 NOT NULL CONSTRAINT df_customers_created_at DEFAULT SYSUTCDATETIME()
);

CREATE TABLE orders (
    id INT IDENTITY(1, 1) NOT NULL CONSTRAINT pk_orders PRIMARY KEY,
    customer_id INT NOT NULL CONSTRAINT fk_orders_customers REFERENCES customers (id),
    total DECIMAL(18, 4) NOT NULL,
    placed_on DATE NOT NULL
);

CREATE INDEX ix_orders_customer_id ON orders (customer_id);
