-- The reference application's tables: profile and soft-delete columns on users, extra domain
-- fields, invites, and the Critter demo resource.
ALTER TABLE users ADD COLUMN first_name TEXT;
ALTER TABLE users ADD COLUMN last_name TEXT;
ALTER TABLE users ADD COLUMN avatar_url TEXT;
ALTER TABLE users ADD COLUMN phone TEXT;
ALTER TABLE users ADD COLUMN address TEXT;
ALTER TABLE users ADD COLUMN city TEXT;
ALTER TABLE users ADD COLUMN state TEXT;
ALTER TABLE users ADD COLUMN postal_code TEXT;
ALTER TABLE users ADD COLUMN country TEXT;
ALTER TABLE users ADD COLUMN deleted_at TEXT;
ALTER TABLE users ADD COLUMN is_deleted BOOLEAN NOT NULL DEFAULT 0;

ALTER TABLE domains ADD COLUMN domain_type VARCHAR(16);
ALTER TABLE domains ADD COLUMN lat DOUBLE;
ALTER TABLE domains ADD COLUMN lon DOUBLE;
ALTER TABLE domains ADD COLUMN area_geojson TEXT;

CREATE TABLE invites (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    recipient_user_id TEXT REFERENCES users (id) ON DELETE SET NULL,
    recipient_email VARCHAR(1024) NOT NULL,
    sender_user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token VARCHAR(1024),
    token_used BOOLEAN NOT NULL DEFAULT 0
);
CREATE INDEX invites_sender_idx ON invites (sender_user_id);

CREATE TABLE critters (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10
);
CREATE INDEX critters_created_idx ON critters (created_at, id);
