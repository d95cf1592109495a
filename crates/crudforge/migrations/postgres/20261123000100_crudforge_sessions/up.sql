-- Sessions end when credentials change, and stored token values are digests.
--
-- users.token_version: access tokens carry the version they were issued for; a password
-- change, a disable or "log out everywhere" raises it, so older tokens stop working on every
-- instance at once, with no extra query (authentication reads the user row anyway).
ALTER TABLE users ADD COLUMN token_version BIGINT NOT NULL DEFAULT 0;

-- tokens.kind: 'api_key' (created through the API or the CLI, accepted by token login),
-- 'refresh' (a refresh token's id, accepted by refresh only) or 'recovery' (a used
-- single-use recovery token).
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api_key';
UPDATE tokens SET kind = 'refresh' WHERE description = 'refresh token';

-- Values are stored as the hex SHA-256 of what was given, whatever path wrote them.
UPDATE tokens SET token = encode(sha256(convert_to(token, 'UTF8')), 'hex');

CREATE FUNCTION crudforge_tokens_guard() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.token IS DISTINCT FROM OLD.token THEN
        -- API keys shorter than 32 characters are too easy to guess.
        IF NEW.kind = 'api_key' AND length(NEW.token) < 32 THEN
            RAISE EXCEPTION 'crudforge_refused:token:an API key needs at least 32 characters'
                USING ERRCODE = 'check_violation';
        END IF;
        NEW.token := encode(sha256(convert_to(NEW.token, 'UTF8')), 'hex');
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF OLD.revoked AND NOT NEW.revoked THEN
            RAISE EXCEPTION 'crudforge_refused:revoked:a revoked token cannot be restored'
                USING ERRCODE = 'check_violation';
        END IF;
        IF OLD.expires_at IS NOT NULL
            AND (NEW.expires_at IS NULL OR NEW.expires_at > OLD.expires_at) THEN
            RAISE EXCEPTION 'crudforge_refused:expires_at:an expiry can be brought forward, never extended'
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tokens_guard BEFORE INSERT OR UPDATE ON tokens
    FOR EACH ROW EXECUTE FUNCTION crudforge_tokens_guard();

-- A new password or a disabled account ends every session of the user: its credential
-- version rises, and a rising version (also "log out everywhere") revokes its refresh tokens.
CREATE FUNCTION crudforge_credentials_changed() RETURNS trigger AS $$
BEGIN
    IF NEW.password IS DISTINCT FROM OLD.password OR (OLD.is_enabled AND NOT NEW.is_enabled) THEN
        NEW.token_version := OLD.token_version + 1;
    END IF;
    IF NEW.token_version <> OLD.token_version THEN
        UPDATE tokens SET revoked = TRUE, revoked_at = NEW.updated_at, updated_at = NEW.updated_at
            WHERE user_id = NEW.id AND kind = 'refresh' AND NOT revoked;
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER users_credentials_changed BEFORE UPDATE ON users
    FOR EACH ROW EXECUTE FUNCTION crudforge_credentials_changed();
