-- The counts of the limits per operation and door (CrudBlueprint::limit) that all instances
-- share, per key and fixed window; see crudforge::limits. Keys never hold secrets: a
-- blueprint's prefix, the operation, and a user id or a client network. Times are Unix seconds.
CREATE TABLE crudforge_limits (
    key TEXT PRIMARY KEY,
    window_end BIGINT NOT NULL,
    used BIGINT NOT NULL,
    granted BIGINT NOT NULL
);
CREATE INDEX crudforge_limits_window_end_idx ON crudforge_limits (window_end);
