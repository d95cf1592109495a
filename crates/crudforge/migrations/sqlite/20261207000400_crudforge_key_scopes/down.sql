DROP TRIGGER tokens_scopes_fixed;
ALTER TABLE tokens DROP COLUMN last_used_at;
ALTER TABLE tokens DROP COLUMN scopes;
