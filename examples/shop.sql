-- The sample source of `make run`: a tiny shop in SQLite.
-- Created on the first `make run` with: bin/snapstore sqlite examples/shop.db < examples/shop.sql
CREATE TABLE products (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  price      DECIMAL(8,2) NOT NULL,
  stock      INTEGER NOT NULL,
  updated_at DATETIME NOT NULL
);
INSERT INTO products VALUES
  (1, 'Espresso cup',    4.50, 120, '2026-01-02 09:00:00'),
  (2, 'Milk jug',        8.90,  40, '2026-01-02 09:00:00'),
  (3, 'Coffee grinder', 59.00,  12, '2026-01-02 09:00:00'),
  (4, 'Paper filters',   3.20, 300, '2026-01-02 09:00:00'),
  (5, 'Tamper',         19.90,  25, '2026-01-02 09:00:00'),
  (6, 'Kettle',         34.00,  18, '2026-01-02 09:00:00'),
  (7, 'Scale',          27.50,  30, '2026-01-02 09:00:00'),
  (8, 'Beans, 1 kg',    21.00,  64, '2026-01-02 09:00:00');

-- A composite key: one path segment per key column in the API
-- (GET /v1/datasets/order_lines/rows/1001/2).
CREATE TABLE order_lines (
  order_id   INTEGER NOT NULL,
  line       INTEGER NOT NULL,
  product_id INTEGER NOT NULL,
  quantity   INTEGER NOT NULL,
  PRIMARY KEY (order_id, line)
);
INSERT INTO order_lines VALUES
  (1001, 1, 1, 2),
  (1001, 2, 8, 1),
  (1002, 1, 3, 1),
  (1003, 1, 4, 5),
  (1003, 2, 2, 1),
  (1003, 3, 7, 1);
