-- Critters keep deleted rows (`#[resource(soft_delete)]`): DELETE sets `deleted_at`, restore
-- clears it. Users already have the column; their `is_deleted` is now read as
-- `deleted_at IS NOT NULL`, so rows deleted by hand before keep it consistent here.
ALTER TABLE critters ADD COLUMN deleted_at TEXT;
UPDATE users SET deleted_at = updated_at WHERE is_deleted AND deleted_at IS NULL;
-- Every critter query now also tests `deleted_at IS NULL`, which an index serves as an
-- equality: it goes right after the other equality columns and before the range and `ORDER
-- BY` columns. So the filtered count stays a covering search (species, deleted_at,
-- cuteness_level), the filtered page and the default list come out of their index already in
-- order, and the unfiltered count reads (deleted_at, created_at, id) only. Same number of
-- indexes as before, so writes maintain no extra one.
DROP INDEX IF EXISTS critters_created_idx;
DROP INDEX IF EXISTS critters_species_cuteness_level_idx;
DROP INDEX IF EXISTS critters_species_created_at_id_cuteness_level_idx;
CREATE INDEX IF NOT EXISTS critters_deleted_at_created_at_id_idx ON critters (deleted_at, created_at, id);
CREATE INDEX IF NOT EXISTS critters_species_deleted_at_cuteness_level_idx ON critters (species, deleted_at, cuteness_level);
CREATE INDEX IF NOT EXISTS critters_species_deleted_at_created_at_id_cuteness_level_idx ON critters (species, deleted_at, created_at, id, cuteness_level);
