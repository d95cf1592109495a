//! Record history (the `history` feature), one folder plugged into the core through the seam:
//! a blueprint keeps its rows' history (`CrudBlueprint::history`), each write records an entry
//! per row in its own transaction, and `GET <item>/history/` shows a row's entries under the
//! read rules. See [history.md](https://github.com/crudforge/crudforge/blob/main/docs/history.md).
//!
//! | Module | Owns |
//! |---|---|
//! | `part` | the blueprint's `history()` and its part: check, route, recording, description |
//! | `record` | an entry of a written row: its state, the members changed, who and when |
//! | `read` | `GET <item>/history/`: the row under its rules, the entries without hidden members |
//! | `docs` | what a history adds to the OpenAPI description |
//! | `store` | the `crudforge_history` table |
//!
//! This file holds the surface: the command line's writes are recorded too.

mod docs;
mod part;
mod read;
mod record;
pub(crate) mod store;

use crate::api::Surface;

/// The history surface.
pub(crate) struct History;

impl Surface for History {
    /// A history records the command line's writes (roles granted, accounts created).
    fn records_writes(&self) -> bool {
        true
    }
}
