//! The jobs' tables, as Diesel sees them (the library's migration `crudforge_jobs`).

diesel::table! {
    /// Durable jobs: one row per job, from its enqueueing to its outcome.
    crudforge_jobs (id) {
        /// The job's number.
        id -> BigInt,
        /// The handler that runs it (`Api::job`'s kind).
        kind -> Text,
        /// Its payload, JSON.
        payload -> Text,
        /// `queued`, `running`, `done`, `failed` or `cancelled`.
        state -> Text,
        /// Claims so far; the fence of a worker's outcome.
        attempts -> Integer,
        /// Claims allowed before it fails for good.
        max_attempts -> Integer,
        /// When it is due (microseconds since 1970, UTC).
        run_at -> BigInt,
        /// While running: when its lease runs out.
        lease_until -> Nullable<BigInt>,
        /// The last failure's message.
        last_error -> Nullable<Text>,
        /// The schedule whose tick made it.
        schedule -> Nullable<Text>,
        /// When it was enqueued.
        created_at -> BigInt,
        /// When it ended (done, failed or cancelled).
        finished_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    /// The schedules' last tick, shared by every instance.
    crudforge_schedules (name) {
        /// The schedule's name.
        name -> Text,
        /// The last tick taken (microseconds since 1970, UTC).
        last_tick -> BigInt,
    }
}
