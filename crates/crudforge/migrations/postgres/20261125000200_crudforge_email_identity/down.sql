CREATE OR REPLACE FUNCTION crudforge_credentials_changed() RETURNS trigger AS $$
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

ALTER TABLE users DROP COLUMN password_rehashes;
