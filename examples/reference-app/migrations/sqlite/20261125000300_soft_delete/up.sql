-- Critters keep deleted rows (`#[resource(soft_delete)]`): DELETE sets `deleted_at`, restore
-- clears it. Users already have the column; their `is_deleted` is now read as
-- `deleted_at IS NOT NULL`, so rows deleted by hand before keep it consistent here.
ALTER TABLE critters ADD COLUMN deleted_at TEXT;
UPDATE users SET deleted_at = updated_at WHERE is_deleted AND deleted_at IS NULL;
-- Every critter query now also tests `deleted_at IS NULL`: the filtered count's index ends
-- with it and an index on it alone counts the unfiltered list, so both counts still read an
-- index only (SQLite: covering index search; PostgreSQL: index-only scan).
DROP INDEX IF EXISTS critters_species_cuteness_level_idx;
CREATE INDEX IF NOT EXISTS critters_species_cuteness_level_deleted_at_idx ON critters (species, cuteness_level, deleted_at);
CREATE INDEX IF NOT EXISTS critters_deleted_at_idx ON critters (deleted_at);
