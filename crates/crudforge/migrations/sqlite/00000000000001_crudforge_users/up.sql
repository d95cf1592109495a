-- The library's own tables: domains (tenants), users, their roles, tokens and settings.
CREATE TABLE domains (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name TEXT NOT NULL,
    active BOOLEAN NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX domains_name_key ON domains (name);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    email TEXT NOT NULL,
    password TEXT,
    is_enabled BOOLEAN NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE user_roles (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    domain_id TEXT REFERENCES domains (id) ON DELETE CASCADE
);
CREATE INDEX user_roles_user_id_idx ON user_roles (user_id);

CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token TEXT NOT NULL,
    description TEXT,
    expires_at TEXT,
    revoked BOOLEAN NOT NULL DEFAULT 0,
    revoked_at TEXT
);
CREATE UNIQUE INDEX tokens_token_key ON tokens (token);
CREATE INDEX tokens_user_id_idx ON tokens (user_id);

CREATE TABLE user_settings (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT
);
CREATE UNIQUE INDEX user_settings_user_key ON user_settings (user_id, key);
