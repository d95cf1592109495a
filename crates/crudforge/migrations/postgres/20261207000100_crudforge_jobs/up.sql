-- Durable jobs (the `jobs` feature): work to run later, inserted in the transaction of the
-- request that causes it, so a rolled-back request leaves none. Workers of every instance
-- claim due rows with a lease (`lease_until`): a worker that dies leaves its lease to run
-- out, and the job is claimed again. `attempts` counts the claims and fences a worker whose
-- lease was taken over (its late outcome changes nothing). Times are microseconds since 1970
-- (UTC). `state`: queued, running, done, failed or cancelled.
CREATE TABLE crudforge_jobs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    run_at BIGINT NOT NULL,
    lease_until BIGINT,
    last_error TEXT,
    schedule TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX crudforge_jobs_state_run_at ON crudforge_jobs (state, run_at);
-- The schedules' last tick, shared by all instances: a tick is taken by the one transaction
-- that moves `last_tick` past it, which also inserts the tick's job.
CREATE TABLE crudforge_schedules (
    name TEXT PRIMARY KEY,
    last_tick BIGINT NOT NULL
);
