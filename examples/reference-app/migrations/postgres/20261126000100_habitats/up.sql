-- Habitats (`/api/habitats/`): signed-in users read them, administrators write them. A
-- critter may name one (`habitat_id`, a foreign key): deleting a habitat that a critter names
-- fails (409), deleted critters included, since they keep their row and may be restored.
CREATE TABLE habitats (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    name VARCHAR(100) NOT NULL UNIQUE,
    climate VARCHAR(50) NOT NULL
);
ALTER TABLE critters ADD COLUMN habitat_id UUID REFERENCES habitats (id);
-- A habitat's critters (`expand=critters`, `critters.name=...`) and the foreign-key check of
-- a habitat's deletion read critters by `habitat_id`.
CREATE INDEX IF NOT EXISTS critters_habitat_id_idx ON critters (habitat_id);
