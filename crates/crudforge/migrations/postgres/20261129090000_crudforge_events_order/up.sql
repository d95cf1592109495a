-- Live updates read events in commit order without a lock that every write takes: each event
-- carries the id of the transaction that wrote it (`tx`, the 64-bit `pg_current_xact_id()`),
-- and a reader takes, in the order (tx, id), only the events whose transaction is older than
-- the oldest one still running (`pg_snapshot_xmin`): those can no longer change, and every
-- event written later sorts after them. Events recorded before this migration all get its own
-- transaction's id, so they keep their order among themselves and come before any new one.
ALTER TABLE crudforge_events
    ADD COLUMN tx BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
DROP INDEX crudforge_events_resource_id;
CREATE INDEX crudforge_events_resource_tx_id ON crudforge_events (resource, tx, id);
-- Pruning by age reads a resource's events through the index above once a minute; every
-- write paid for a second index on `created_at`.
DROP INDEX crudforge_events_created_at;

-- A stream's state on its way from the instance that held it to the one its client resumed
-- with: written by the first, taken (deleted) by the second; left-overs older than a minute
-- are deleted by the next hand-over.
CREATE TABLE crudforge_handoffs (
    token TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
