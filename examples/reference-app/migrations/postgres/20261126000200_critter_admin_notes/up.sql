-- Critters get notes for administrators' eyes only (`#[resource(read = admin)]`): absent from
-- every answer other callers get, and only administrators write them. Nullable, so existing
-- rows and clients that never send it are unaffected.
ALTER TABLE critters ADD COLUMN vet_notes TEXT;
