-- E-mail identity and password rehashing.
--
-- E-mail addresses are stored in one normalized form (crudforge::users::normalize_email:
-- Unicode NFC, then lowercase); PostgreSQL's lower() depends on the collation, SQLite's folds
-- ASCII only, so both backends leave it to Rust. The addresses stored before this migration
-- are normalized right after it by crudforge::users::normalize_stored_emails, which
-- Database::run_migrations runs once; addresses that normalize to the same one are reported
-- (a warning naming the users' ids) and left untouched, never merged.
--
-- users.password_rehashes: a login that finds the password hashed at a lower cost than
-- BCRYPT_COST stores a new hash of the same password and raises this counter in the same
-- statement; the credentials trigger below then knows that the password did not change, and
-- the user's sessions continue. Any other change of the password still ends them. Only the
-- library writes this column.
ALTER TABLE users ADD COLUMN password_rehashes BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION crudforge_credentials_changed() RETURNS trigger AS $$
BEGIN
    IF (NEW.password IS DISTINCT FROM OLD.password
            AND NEW.password_rehashes = OLD.password_rehashes)
        OR (OLD.is_enabled AND NOT NEW.is_enabled) THEN
        NEW.token_version := OLD.token_version + 1;
    END IF;
    IF NEW.token_version <> OLD.token_version THEN
        UPDATE tokens SET revoked = TRUE, revoked_at = NEW.updated_at, updated_at = NEW.updated_at
            WHERE user_id = NEW.id AND kind = 'refresh' AND NOT revoked;
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
