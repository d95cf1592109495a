ALTER TABLE critters DROP COLUMN vet_notes;
