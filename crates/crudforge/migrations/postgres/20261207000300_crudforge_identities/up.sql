-- Sign-in providers (the `providers` feature): the identities an account signs in with, one
-- per (provider, subject) pair, the subject being the provider's own id of the person.
-- `email` is the address the provider gave at the last sign-in. Times are microseconds
-- since 1970 (UTC).
CREATE TABLE crudforge_identities (
    provider TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email TEXT,
    created_at BIGINT NOT NULL,
    signed_in_at BIGINT NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX crudforge_identities_user ON crudforge_identities (user_id);
-- The sign-in tickets that came back from a provider, by id, until they expire: a ticket is
-- used once, on whichever instance the browser returns to.
CREATE TABLE crudforge_used_tickets (
    id TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
