-- Undoes up.sql, in reverse order.
DROP INDEX IF EXISTS critters_crudforge_search_idx;
ALTER TABLE critters DROP COLUMN IF EXISTS crudforge_search;
