-- Undoes up.sql, in reverse order.
DROP TABLE notes;
