CREATE TABLE crudforge_events_numbered (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    resource TEXT NOT NULL,
    kind TEXT NOT NULL,
    row_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
INSERT INTO crudforge_events_numbered (id, resource, kind, row_key, created_at)
    SELECT id, resource, kind, row_key, created_at FROM crudforge_events;
DROP TABLE crudforge_events;
ALTER TABLE crudforge_events_numbered RENAME TO crudforge_events;
CREATE INDEX crudforge_events_resource_id ON crudforge_events (resource, id);
CREATE INDEX crudforge_events_created_at ON crudforge_events (created_at);
