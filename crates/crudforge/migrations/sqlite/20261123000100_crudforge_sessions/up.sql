-- Sessions end when credentials change, and stored token values are digests.
--
-- users.token_version: access tokens carry the version they were issued for; a password
-- change, a disable or "log out everywhere" raises it, so older tokens stop working on every
-- instance at once, with no extra query (authentication reads the user row anyway).
ALTER TABLE users ADD COLUMN token_version INTEGER NOT NULL DEFAULT 0;

-- tokens.kind: 'api_key' (created through the API or the CLI, accepted by token login),
-- 'refresh' (a refresh token's id, accepted by refresh only) or 'recovery' (a used
-- single-use recovery token).
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api_key';
UPDATE tokens SET kind = 'refresh' WHERE description = 'refresh token';

-- Values are stored as the hex SHA-256 of what was given, whatever path wrote them.
UPDATE tokens SET token = crudforge_sha256(token);

CREATE TRIGGER tokens_digest_insert AFTER INSERT ON tokens
BEGIN
    UPDATE tokens SET token = crudforge_sha256(NEW.token) WHERE id = NEW.id;
END;

-- (The insert trigger's own update, from a value to its digest, is not digested again.)
CREATE TRIGGER tokens_digest_update AFTER UPDATE OF token ON tokens
WHEN NEW.token IS NOT OLD.token AND NEW.token IS NOT crudforge_sha256(OLD.token)
BEGIN
    UPDATE tokens SET token = crudforge_sha256(NEW.token) WHERE id = NEW.id;
END;

-- API keys shorter than 32 characters are too easy to guess.
CREATE TRIGGER tokens_key_length BEFORE INSERT ON tokens
WHEN COALESCE(NEW.kind, 'api_key') = 'api_key' AND length(NEW.token) < 32
BEGIN
    SELECT RAISE(ABORT, 'crudforge_refused:token:an API key needs at least 32 characters');
END;

CREATE TRIGGER tokens_key_length_update BEFORE UPDATE OF token ON tokens
WHEN NEW.kind = 'api_key' AND NEW.token IS NOT OLD.token AND length(NEW.token) < 32
BEGIN
    SELECT RAISE(ABORT, 'crudforge_refused:token:an API key needs at least 32 characters');
END;

-- A revoked token stays revoked, and an expiry is never pushed later or removed.
CREATE TRIGGER tokens_stay_revoked BEFORE UPDATE OF revoked ON tokens
WHEN OLD.revoked AND NOT NEW.revoked
BEGIN
    SELECT RAISE(ABORT, 'crudforge_refused:revoked:a revoked token cannot be restored');
END;

CREATE TRIGGER tokens_expiry_not_extended BEFORE UPDATE OF expires_at ON tokens
WHEN OLD.expires_at IS NOT NULL AND (NEW.expires_at IS NULL OR NEW.expires_at > OLD.expires_at)
BEGIN
    SELECT RAISE(ABORT, 'crudforge_refused:expires_at:an expiry can be brought forward, never extended');
END;

-- A new password or a disabled account ends every session of the user: its credential
-- version rises, and a rising version (also "log out everywhere") revokes its refresh tokens.
CREATE TRIGGER users_credentials_changed AFTER UPDATE OF password, is_enabled ON users
WHEN NEW.password IS NOT OLD.password OR (OLD.is_enabled AND NOT NEW.is_enabled)
BEGIN
    UPDATE users SET token_version = token_version + 1 WHERE id = NEW.id;
END;

CREATE TRIGGER users_sessions_ended AFTER UPDATE OF token_version ON users
WHEN NEW.token_version <> OLD.token_version
BEGIN
    UPDATE tokens SET revoked = 1, revoked_at = NEW.updated_at, updated_at = NEW.updated_at
        WHERE user_id = NEW.id AND kind = 'refresh' AND revoked = 0;
END;
