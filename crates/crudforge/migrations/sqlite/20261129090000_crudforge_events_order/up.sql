-- The order of events is (tx, id) on both backends. SQLite has one writer at a time, so ids
-- are committed in order and `tx` is always 0: the order is the id's.
--
-- The table is rebuilt without AUTOINCREMENT (which wrote `sqlite_sequence` at every event):
-- ids still never go back, since pruning always keeps each resource's newest event, so the
-- largest id stays in the table. And without the index on `created_at`: pruning by age reads a
-- resource's events through the index on (resource, tx, id) once a minute, while every write
-- paid for the second index.
CREATE TABLE crudforge_events_ordered (
    id INTEGER PRIMARY KEY,
    resource TEXT NOT NULL,
    kind TEXT NOT NULL,
    row_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    tx BIGINT NOT NULL DEFAULT 0
);
INSERT INTO crudforge_events_ordered (id, resource, kind, row_key, created_at)
    SELECT id, resource, kind, row_key, created_at FROM crudforge_events;
DROP TABLE crudforge_events;
ALTER TABLE crudforge_events_ordered RENAME TO crudforge_events;
CREATE INDEX crudforge_events_resource_tx_id ON crudforge_events (resource, tx, id);
