-- Critters keep deleted rows (`#[resource(soft_delete)]`): DELETE sets `deleted_at`, restore
-- clears it. Users already have the column; their `is_deleted` is now read as
-- `deleted_at IS NOT NULL`, so rows deleted by hand before keep it consistent here.
ALTER TABLE critters ADD COLUMN deleted_at TEXT;
UPDATE users SET deleted_at = updated_at WHERE is_deleted AND deleted_at IS NULL;
