-- Failed credential checks, counted per key (an account or a client address) in fixed
-- windows; see crudforge::auth::throttle. Keys never hold secrets: accounts are user ids or
-- SHA-256 digests of e-mail addresses, addresses are IPs (IPv6 by /64). Times are Unix seconds.
CREATE TABLE auth_failures (
    key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    failures INTEGER NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX auth_failures_window_start_idx ON auth_failures (window_start);
