-- Mail flows (the `mail` feature): the links mailed to verify an address, confirm or revert
-- an e-mail change and sign in. Only the SHA-256 of a link's token is kept (`digest`, hex),
-- so a copy of the table holds no usable link; a token is used once (`used_at`). `email` is
-- the address the flow is about: the one to verify, the new one of a change, the old one a
-- revert restores, the one a sign-in link went to. Times are microseconds since 1970 (UTC).
CREATE TABLE crudforge_mail_tokens (
    digest TEXT PRIMARY KEY,
    flow TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX crudforge_mail_tokens_user ON crudforge_mail_tokens (user_id, flow);
-- The address of every account created while verification was on, and when it was
-- verified (NULL: not yet). An account without a row was made before, and is taken as it is.
CREATE TABLE crudforge_addresses (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    verified_at BIGINT
);
