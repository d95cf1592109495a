-- The indexes of the documented critter list, `?species=cat&cuteness_level__gte=5&page=2`
-- in the default order (created_at, id); docs/database.md shows the plans before and after.
-- `Critter` declares them with `#[resource(index(...))]`, so a server warns if one is missing.
--
-- The count: the equality column, then the range column (SQLite: a covering index search;
-- PostgreSQL: an index-only scan).
CREATE INDEX IF NOT EXISTS critters_species_cuteness_level_idx ON critters (species, cuteness_level);
-- The page: the equality column, then the order, so rows come out sorted and the scan stops
-- after offset + limit matches; `cuteness_level` last so non-matching rows are skipped
-- inside the index, without reading the table.
CREATE INDEX IF NOT EXISTS critters_species_created_at_id_cuteness_level_idx ON critters (species, created_at, id, cuteness_level);
