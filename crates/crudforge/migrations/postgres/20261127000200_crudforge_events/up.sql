-- Live updates (the `realtime` feature): one row per create, update, delete or restore of a
-- resource whose blueprint offers a feed, written in the write's own transaction, so a
-- rolled-back write leaves none. `id` orders them: a write takes a transaction-scoped
-- advisory lock before it takes its ids, so ids are committed in order; `row_key` is the
-- row's id as text; `created_at` is microseconds since 1970 (UTC), what the retention by age
-- prunes on.
CREATE TABLE crudforge_events (
    id BIGSERIAL PRIMARY KEY,
    resource TEXT NOT NULL,
    kind TEXT NOT NULL,
    row_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX crudforge_events_resource_id ON crudforge_events (resource, id);
CREATE INDEX crudforge_events_created_at ON crudforge_events (created_at);
