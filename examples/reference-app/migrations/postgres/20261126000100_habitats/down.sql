DROP INDEX IF EXISTS critters_habitat_id_idx;
ALTER TABLE critters DROP COLUMN habitat_id;
DROP TABLE habitats;
