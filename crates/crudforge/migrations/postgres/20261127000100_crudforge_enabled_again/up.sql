-- An account enabled again starts a new credential version, as a disabled one does: a token
-- issued while it was disabled at the version the disable set (a recovery token asked for
-- then) does not come back to life when it is enabled again.
CREATE FUNCTION crudforge_enabled_again() RETURNS trigger AS $$
BEGIN
    IF NOT OLD.is_enabled AND NEW.is_enabled THEN
        NEW.token_version := NEW.token_version + 1;
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER users_enabled_again BEFORE UPDATE ON users
    FOR EACH ROW EXECUTE FUNCTION crudforge_enabled_again();
