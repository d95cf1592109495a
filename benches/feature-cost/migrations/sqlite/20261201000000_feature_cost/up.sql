-- The three variants of the benchmark's resource (src/main.rs): the same columns and indexes,
-- each in its own table; `fc_file` adds the photo (JSON: the file's name, size, type and id).
-- The indexes are those the resources declare with `#[resource(index(...))]`: the default
-- order (created_at, id), then the count and the page of `?species=cat&cuteness_level__gte=5`.

CREATE TABLE fc_plain (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10
);
CREATE INDEX IF NOT EXISTS fc_plain_created_at_id_idx ON fc_plain (created_at, id);
CREATE INDEX IF NOT EXISTS fc_plain_species_cuteness_level_idx ON fc_plain (species, cuteness_level);
CREATE INDEX IF NOT EXISTS fc_plain_species_created_at_id_cuteness_level_idx ON fc_plain (species, created_at, id, cuteness_level);

CREATE TABLE fc_feed (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10
);
CREATE INDEX IF NOT EXISTS fc_feed_created_at_id_idx ON fc_feed (created_at, id);
CREATE INDEX IF NOT EXISTS fc_feed_species_cuteness_level_idx ON fc_feed (species, cuteness_level);
CREATE INDEX IF NOT EXISTS fc_feed_species_created_at_id_cuteness_level_idx ON fc_feed (species, created_at, id, cuteness_level);

CREATE TABLE fc_file (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10,
    photo TEXT
);
CREATE INDEX IF NOT EXISTS fc_file_created_at_id_idx ON fc_file (created_at, id);
CREATE INDEX IF NOT EXISTS fc_file_species_cuteness_level_idx ON fc_file (species, cuteness_level);
CREATE INDEX IF NOT EXISTS fc_file_species_created_at_id_cuteness_level_idx ON fc_file (species, created_at, id, cuteness_level);
