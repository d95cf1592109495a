DROP INDEX IF EXISTS critters_deleted_at_idx;
DROP INDEX IF EXISTS critters_species_cuteness_level_deleted_at_idx;
CREATE INDEX IF NOT EXISTS critters_species_cuteness_level_idx ON critters (species, cuteness_level);
ALTER TABLE critters DROP COLUMN deleted_at;
