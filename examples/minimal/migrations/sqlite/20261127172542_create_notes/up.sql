-- Written by crudforge's make-migrations from the mounted model-first resources.

-- notes: new table
CREATE TABLE notes (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    author_id TEXT NOT NULL,
    title TEXT NOT NULL CHECK (length(title) >= 1 AND length(title) <= 200),
    body TEXT
);
