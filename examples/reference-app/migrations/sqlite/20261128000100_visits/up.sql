-- Habitats get an optional keeper (a user's id; administrators set it, as they write
-- habitats), and visits (`/api/visits/`) note a user's visit to a critter. A visit's rules
-- are expressions on the model: its visitor (set by the server), the keeper of its critter's
-- habitat (`critter.habitat.keeper_id = @me`) and administrators read it; its visitor changes
-- and deletes it.
ALTER TABLE habitats ADD COLUMN keeper_id TEXT;
CREATE TABLE visits (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    critter_id TEXT NOT NULL REFERENCES critters (id),
    note VARCHAR(500) NOT NULL,
    visitor_id TEXT NOT NULL
);
-- The read rule crosses from a visit to its critter, then to the habitat, and compares the
-- keeper: the keeper's habitats by `keeper_id`, their critters by `critters.habitat_id`
-- (20261126000100_habitats), their visits by `critter_id`. The visitor's own visits by
-- `visitor_id`. `Visit` and `Habitat` declare them, so a server warns if one is missing.
CREATE INDEX IF NOT EXISTS habitats_keeper_id_idx ON habitats (keeper_id);
CREATE INDEX IF NOT EXISTS visits_critter_id_idx ON visits (critter_id);
CREATE INDEX IF NOT EXISTS visits_visitor_id_idx ON visits (visitor_id);
