ALTER TABLE critters DROP COLUMN photo;
