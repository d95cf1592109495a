-- Idempotency keys: one row per caller and key, written in the same transaction as the write
-- it protects, holding the answer a retry receives. Times are microseconds since 1970 (UTC).
CREATE TABLE crudforge_idempotency_keys (
    caller TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    location TEXT,
    etag TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (caller, idem_key)
);
CREATE INDEX crudforge_idempotency_keys_expires_at ON crudforge_idempotency_keys (expires_at);
