DROP TRIGGER users_sessions_ended;
DROP TRIGGER users_credentials_changed;
DROP TRIGGER tokens_expiry_not_extended;
DROP TRIGGER tokens_stay_revoked;
DROP TRIGGER tokens_digest_update;
DROP TRIGGER tokens_digest_insert;
ALTER TABLE tokens DROP COLUMN kind;
ALTER TABLE users DROP COLUMN token_version;
