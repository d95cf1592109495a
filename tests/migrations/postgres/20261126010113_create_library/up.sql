-- Written by crudforge's make-migrations from the mounted model-first resources.

-- authors: new table
CREATE TABLE authors (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    name VARCHAR(100) NOT NULL UNIQUE CHECK (char_length(name) >= 1),
    born INTEGER
);

-- books: new table
CREATE TABLE books (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    title VARCHAR(200) NOT NULL,
    year INTEGER NOT NULL CHECK (year >= 1450 AND year <= 2100),
    author_id UUID NOT NULL REFERENCES authors (id) ON DELETE RESTRICT,
    condition TEXT NOT NULL DEFAULT 'new' CHECK (condition IN ('new', 'used'))
);
CREATE INDEX IF NOT EXISTS books_author_id_title_idx ON books (author_id, title);
