DROP TABLE visits;
DROP INDEX IF EXISTS habitats_keeper_id_idx;
ALTER TABLE habitats DROP COLUMN keeper_id;
