DROP TABLE crudforge_handoffs;
DROP INDEX crudforge_events_resource_tx_id;
CREATE INDEX crudforge_events_resource_id ON crudforge_events (resource, id);
CREATE INDEX crudforge_events_created_at ON crudforge_events (created_at);
ALTER TABLE crudforge_events DROP COLUMN tx;
