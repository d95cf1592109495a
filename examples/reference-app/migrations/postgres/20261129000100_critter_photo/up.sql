-- Critters get a photo (`#[resource(file(...))]`): the file's name, size, type and id as JSON,
-- the file itself in the files folder. Nullable, so existing rows and clients are unaffected.
ALTER TABLE critters ADD COLUMN photo JSONB;
