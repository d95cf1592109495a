-- SQLite cannot drop a column a foreign key uses: the table is rebuilt without it.
DROP INDEX IF EXISTS critters_habitat_id_idx;
CREATE TABLE critters_without_habitat (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10,
    deleted_at TEXT
);
INSERT INTO critters_without_habitat (id, created_at, updated_at, name, species, cuteness_level, deleted_at)
    SELECT id, created_at, updated_at, name, species, cuteness_level, deleted_at FROM critters;
DROP TABLE critters;
ALTER TABLE critters_without_habitat RENAME TO critters;
CREATE INDEX IF NOT EXISTS critters_deleted_at_created_at_id_idx ON critters (deleted_at, created_at, id);
CREATE INDEX IF NOT EXISTS critters_species_deleted_at_cuteness_level_idx ON critters (species, deleted_at, cuteness_level);
CREATE INDEX IF NOT EXISTS critters_species_deleted_at_created_at_id_cuteness_level_idx ON critters (species, deleted_at, created_at, id, cuteness_level);
DROP TABLE habitats;
