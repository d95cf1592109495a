-- Written by crudforge's make-migrations from the mounted model-first resources.

-- notes: new table
CREATE TABLE notes (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    author_id UUID NOT NULL,
    title VARCHAR(200) NOT NULL CHECK (char_length(title) >= 1),
    body TEXT
);
