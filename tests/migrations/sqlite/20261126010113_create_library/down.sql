-- Undoes up.sql, in reverse order.
DROP TABLE books;
DROP TABLE authors;
