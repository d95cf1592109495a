//! The events table, as Diesel sees it: the change capture every feed reads.

diesel::table! {
    /// The recorded changes of resources whose blueprint offers a feed (see `feed`).
    crudforge_events (id) {
        /// The event's number, in the order it was written; never reused.
        id -> BigInt,
        /// The resource's table.
        resource -> Text,
        /// `created`, `updated`, `deleted` or `restored`.
        kind -> Text,
        /// The row's id, as text.
        row_key -> Text,
        /// Microseconds since 1970.
        created_at -> BigInt,
        /// The writing transaction's id on PostgreSQL (events are read in the order
        /// `(tx, id)`); 0 on SQLite.
        tx -> BigInt,
    }
}

diesel::table! {
    /// Where each reader of the events that is not a stream (a webhook subscription) has
    /// read up to, per resource: pruning keeps every event after the earliest of them.
    crudforge_event_readers (reader, resource) {
        /// The reader (`webhook:<name>`).
        reader -> Text,
        /// The resource's table.
        resource -> Text,
        /// The place read up to: the transaction (0 on SQLite) ...
        tx -> BigInt,
        /// ... and the event's number.
        id -> BigInt,
    }
}
