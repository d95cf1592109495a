DROP INDEX IF EXISTS critters_deleted_at_created_at_id_idx;
DROP INDEX IF EXISTS critters_species_deleted_at_cuteness_level_idx;
DROP INDEX IF EXISTS critters_species_deleted_at_created_at_id_cuteness_level_idx;
CREATE INDEX IF NOT EXISTS critters_created_idx ON critters (created_at, id);
CREATE INDEX IF NOT EXISTS critters_species_cuteness_level_idx ON critters (species, cuteness_level);
CREATE INDEX IF NOT EXISTS critters_species_created_at_id_cuteness_level_idx ON critters (species, created_at, id, cuteness_level);
ALTER TABLE critters DROP COLUMN deleted_at;
