-- Second factors (the `factors` feature). Times are microseconds since 1970 (UTC).
-- An account's factors: a TOTP secret, sealed with a key derived from the API's signing key
-- (the row's id bound in), or a passkey's public key and counter (the `passkeys` feature),
-- unconfirmed until a first code or credential proves the authenticator has it; `last_step`
-- is the last time step a code was accepted at, so no code is accepted twice.
CREATE TABLE crudforge_factors (
    id UUID PRIMARY KEY,
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    label TEXT,
    secret TEXT NOT NULL,
    last_step BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    confirmed_at BIGINT,
    last_used_at BIGINT,
    credential_id TEXT
);
CREATE INDEX crudforge_factors_user ON crudforge_factors (user_id);
-- A passkey's credential id (base64url), one account's only.
CREATE UNIQUE INDEX crudforge_factors_credential ON crudforge_factors (credential_id);
-- An account's recovery codes, by their SHA-256 (the codes are random), each used once.
CREATE TABLE crudforge_recovery_codes (
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    digest TEXT NOT NULL,
    used_at BIGINT,
    PRIMARY KEY (user_id, digest)
);
-- When a second factor was first asked of an account that has none (AUTH_FACTOR_ROLES,
-- AUTH_FACTOR_DOMAINS): its grace period runs from then.
CREATE TABLE crudforge_factor_grace (
    user_id UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    since BIGINT NOT NULL
);
