-- E-mail identity and password rehashing.
--
-- E-mail addresses are stored in one normalized form (crudforge::users::normalize_email:
-- Unicode NFC, then lowercase), which SQLite's lower() cannot compute (it folds ASCII only).
-- The addresses stored before this migration are normalized right after it, in Rust, by
-- crudforge::users::normalize_stored_emails, which Database::run_migrations runs once;
-- addresses that normalize to the same one are reported (a warning naming the users' ids)
-- and left untouched, never merged.
--
-- users.password_rehashes: a login that finds the password hashed at a lower cost than
-- BCRYPT_COST stores a new hash of the same password and raises this counter in the same
-- statement; the credentials trigger below then knows that the password did not change, and
-- the user's sessions continue. Any other change of the password still ends them. Only the
-- library writes this column.
ALTER TABLE users ADD COLUMN password_rehashes INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER users_credentials_changed;

CREATE TRIGGER users_credentials_changed AFTER UPDATE OF password, is_enabled ON users
WHEN (NEW.password IS NOT OLD.password AND NEW.password_rehashes IS OLD.password_rehashes)
    OR (OLD.is_enabled AND NOT NEW.is_enabled)
BEGIN
    UPDATE users SET token_version = token_version + 1 WHERE id = NEW.id;
END;
