-- Record history (the `history` feature): one entry per create, update, delete or restore of
-- a row of a resource whose blueprint keeps history, written in the write's own transaction,
-- so a rolled-back write leaves none. `state` is the row after the write as its generated
-- representation (JSON, write-only members never in it; NULL once the row is gone);
-- `changes` the members that changed, each with its old and new value (JSON). `actor` is the
-- account that wrote (NULL: anonymous or the command line), `request_id` the request's id,
-- `at` microseconds since 1970 (UTC). `seq`, `prev` and `hash` link the resource's entries
-- into a hash chain once sealed (NULL until then); `tx` orders entries for sealing (0 on
-- SQLite, whose writes are serialized).
CREATE TABLE crudforge_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    resource TEXT NOT NULL,
    row_key TEXT NOT NULL,
    action TEXT NOT NULL,
    actor TEXT,
    request_id TEXT,
    at BIGINT NOT NULL,
    state TEXT,
    changes TEXT NOT NULL,
    tx BIGINT NOT NULL DEFAULT 0,
    seq BIGINT,
    prev TEXT,
    hash TEXT
);
CREATE INDEX crudforge_history_row ON crudforge_history (resource, row_key, id);
CREATE INDEX crudforge_history_resource ON crudforge_history (resource, id);
-- The chain of each resource, in order; the entries not sealed yet, in the order sealing takes.
CREATE INDEX crudforge_history_chain ON crudforge_history (resource, seq);
CREATE INDEX crudforge_history_unsealed ON crudforge_history (tx, id) WHERE hash IS NULL;
