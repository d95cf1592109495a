-- Refresh-token families: every refresh token descended from one login (or one password
-- change) carries that session's family id, so that presenting a rotated refresh token again
-- revokes the whole family in one statement (OAuth 2.0 Security BCP, section 4.14).
-- NULL for API keys and recovery records.
ALTER TABLE tokens ADD COLUMN family_id UUID;

-- Refresh tokens stored before this migration each start a family of their own.
UPDATE tokens SET family_id = id WHERE kind = 'refresh';

CREATE INDEX tokens_family_id_idx ON tokens (family_id);
