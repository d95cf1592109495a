ALTER TABLE critters DROP COLUMN deleted_at;
