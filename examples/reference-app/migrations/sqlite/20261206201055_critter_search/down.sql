-- Undoes up.sql, in reverse order.
DROP TRIGGER IF EXISTS critters__search_insert;
DROP TRIGGER IF EXISTS critters__search_delete;
DROP TRIGGER IF EXISTS critters__search_update;
DROP TABLE IF EXISTS critters__search;
