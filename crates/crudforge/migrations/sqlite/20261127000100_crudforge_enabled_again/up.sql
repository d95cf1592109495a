-- An account enabled again starts a new credential version, as a disabled one does: a token
-- issued while it was disabled at the version the disable set (a recovery token asked for
-- then) does not come back to life when it is enabled again.
CREATE TRIGGER users_enabled_again AFTER UPDATE OF is_enabled ON users
WHEN NOT OLD.is_enabled AND NEW.is_enabled
BEGIN
    UPDATE users SET token_version = token_version + 1 WHERE id = NEW.id;
END;
