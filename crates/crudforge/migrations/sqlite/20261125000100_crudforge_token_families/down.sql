DROP INDEX tokens_family_id_idx;
ALTER TABLE tokens DROP COLUMN family_id;
