-- The order of events is (tx, id) on both backends. SQLite has one writer at a time, so ids
-- are committed in order and `tx` is always 0: the order is the id's.
ALTER TABLE crudforge_events ADD COLUMN tx BIGINT NOT NULL DEFAULT 0;
DROP INDEX crudforge_events_resource_id;
CREATE INDEX crudforge_events_resource_tx_id ON crudforge_events (resource, tx, id);
