-- Flyway versioned migration 2: a new column, then rows that use it (a new batch: SQL
-- Server compiles a batch before running it, so the column must exist first).
ALTER TABLE customers ADD country NCHAR(2) NULL;
GO

INSERT INTO customers (name, email, country) VALUES
    (N'Ana', N'ana@example.com', N'PT'),
    (N'Bo', NULL, N'SE');

INSERT INTO orders (customer_id, total, placed_on)
SELECT id, 12.5000, '2024-01-02' FROM customers WHERE name = N'Ana';
