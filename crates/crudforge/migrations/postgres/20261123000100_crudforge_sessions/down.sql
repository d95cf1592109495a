DROP TRIGGER users_credentials_changed ON users;
DROP FUNCTION crudforge_credentials_changed();
DROP TRIGGER tokens_guard ON tokens;
DROP FUNCTION crudforge_tokens_guard();
ALTER TABLE tokens DROP COLUMN kind;
ALTER TABLE users DROP COLUMN token_version;
