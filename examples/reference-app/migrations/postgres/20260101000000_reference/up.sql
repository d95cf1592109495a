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
ALTER TABLE users ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN is_deleted BOOLEAN NOT NULL DEFAULT FALSE;

ALTER TABLE domains ADD COLUMN domain_type VARCHAR(16);
ALTER TABLE domains ADD COLUMN lat DOUBLE PRECISION;
ALTER TABLE domains ADD COLUMN lon DOUBLE PRECISION;
ALTER TABLE domains ADD COLUMN area_geojson JSONB;

CREATE TABLE invites (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    recipient_user_id UUID REFERENCES users (id) ON DELETE SET NULL,
    recipient_email VARCHAR(1024) NOT NULL,
    sender_user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token VARCHAR(1024),
    token_used BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX invites_sender_idx ON invites (sender_user_id);

CREATE TABLE critters (
    id UUID PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    name VARCHAR(100) NOT NULL,
    species VARCHAR(50) NOT NULL,
    cuteness_level INTEGER NOT NULL DEFAULT 10
);
CREATE INDEX critters_created_idx ON critters (created_at, id);
