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
