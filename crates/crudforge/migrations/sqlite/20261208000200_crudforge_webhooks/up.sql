-- Webhooks (the `webhooks` feature). A subscription reads the change capture
-- (`crudforge_events`) in order; where it has read up to, per resource, is a row of
-- `crudforge_event_readers`, and pruning keeps every event after the earliest of them.
CREATE TABLE crudforge_event_readers (
    reader TEXT NOT NULL,
    resource TEXT NOT NULL,
    tx BIGINT NOT NULL,
    id BIGINT NOT NULL,
    PRIMARY KEY (reader, resource)
);
-- The state of each subscription the application declares (the declaration itself lives in
-- the application): whether its endpoint is sent to, why not, its failures in a row.
CREATE TABLE crudforge_webhooks (
    name TEXT PRIMARY KEY,
    enabled BOOLEAN NOT NULL,
    reason TEXT,
    failures INTEGER NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);
-- One message to one subscription's endpoint: the payload rendered as the subscription's
-- principal reads the row, `msg_id` the `webhook-id` every attempt sends. `status` pending,
-- delivered or dead; `next_at`, `lease_until`, `done_at`, `created_at` microseconds since 1970.
CREATE TABLE crudforge_webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook TEXT NOT NULL,
    msg_id TEXT NOT NULL,
    event_id BIGINT NOT NULL,
    resource TEXT NOT NULL,
    kind TEXT NOT NULL,
    row_key TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    last_code INTEGER,
    last_error TEXT,
    latency_ms INTEGER,
    created_at BIGINT NOT NULL,
    done_at BIGINT
);
CREATE INDEX crudforge_webhook_deliveries_due ON crudforge_webhook_deliveries (webhook, status, next_at, id);
CREATE INDEX crudforge_webhook_deliveries_row ON crudforge_webhook_deliveries (webhook, resource, row_key);
CREATE INDEX crudforge_webhook_deliveries_event ON crudforge_webhook_deliveries (webhook, event_id);
