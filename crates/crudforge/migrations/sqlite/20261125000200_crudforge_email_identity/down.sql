DROP TRIGGER users_credentials_changed;

CREATE TRIGGER users_credentials_changed AFTER UPDATE OF password, is_enabled ON users
WHEN NEW.password IS NOT OLD.password OR (OLD.is_enabled AND NOT NEW.is_enabled)
BEGIN
    UPDATE users SET token_version = token_version + 1 WHERE id = NEW.id;
END;

ALTER TABLE users DROP COLUMN password_rehashes;
