-- Written by crudforge's make-migrations from the mounted resources.

-- critters: search index over (name, species)
ALTER TABLE critters ADD COLUMN crudforge_search tsvector GENERATED ALWAYS AS (setweight(to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, ''), '[\x01-\x2F\x3A-\x40\x5B-\x60\x7B-\x7F]+', ' ', 'g')), 'A') || setweight(to_tsvector('simple'::regconfig, regexp_replace(coalesce(species, ''), '[\x01-\x2F\x3A-\x40\x5B-\x60\x7B-\x7F]+', ' ', 'g')), 'B')) STORED;
CREATE INDEX critters_crudforge_search_idx ON critters USING GIN (crudforge_search);
