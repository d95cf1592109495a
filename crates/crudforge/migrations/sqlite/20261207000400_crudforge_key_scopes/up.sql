-- Scoped API keys (see docs/auth.md, "Scoped API keys").
--
-- tokens.scopes: what an API key is limited to, space-separated entries (`read`, `Critter`,
-- `Critter:delete`), checked against the mounted resources when the key is created through
-- the API. NULL: the key has its owner's full access (every key stored before this
-- migration), and for the other kinds. Set when the key is created, never changed.
ALTER TABLE tokens ADD COLUMN scopes TEXT;

-- tokens.last_used_at: when the key was last exchanged for an access token (token login).
-- Requests made with that access token do not write it. NULL: never exchanged.
ALTER TABLE tokens ADD COLUMN last_used_at TEXT;

-- A key's scopes are fixed when it is created: no path may widen (or change) them later.
CREATE TRIGGER tokens_scopes_fixed BEFORE UPDATE OF scopes ON tokens
WHEN NEW.scopes IS NOT OLD.scopes
BEGIN
    SELECT RAISE(ABORT, 'crudforge_refused:scopes:the scopes of a key are fixed when it is created');
END;
