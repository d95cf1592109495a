-- Written by crudforge's make-migrations from the mounted model-first resources.

-- authors: new table
CREATE TABLE authors (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name TEXT NOT NULL UNIQUE CHECK (length(name) >= 1 AND length(name) <= 100),
    born INTEGER
);

-- books: new table
CREATE TABLE books (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    title TEXT NOT NULL CHECK (length(title) <= 200),
    year INTEGER NOT NULL CHECK (year >= 1450 AND year <= 2100),
    author_id TEXT NOT NULL REFERENCES authors (id) ON DELETE RESTRICT,
    condition TEXT NOT NULL DEFAULT 'new' CHECK (condition IN ('new', 'used'))
);
CREATE INDEX IF NOT EXISTS books_author_id_title_idx ON books (author_id, title);
