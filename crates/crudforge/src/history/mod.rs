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
//! | `chain` | each resource's hash chain: sealing committed entries in commit order, the check |
//! | `cli` | `history verify` |
//!
//! This file holds the surface: the command line's writes are recorded too, and the server
//! seals new entries into their chains (the chore `seal_history`).

mod chain;
pub(crate) mod cli;
mod docs;
mod part;
mod read;
mod record;
pub(crate) mod store;

use crate::api::{Api, Chore, Surface};

/// How often a serving API seals new entries into their chains.
const SEAL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// The history surface.
pub(crate) struct History;

impl Surface for History {
    /// A history records the command line's writes (roles granted, accounts created).
    fn records_writes(&self) -> bool {
        true
    }

    /// New entries sealed into their resources' chains, when some blueprint keeps history.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let keeps = api
            .mounts()
            .iter()
            .any(|m| m.faces().iter().any(|f| f.is::<part::Sealed>()));
        if keeps {
            out.push(Chore {
                name: "seal_history",
                every: SEAL_INTERVAL,
                run: |api| Box::pin(chain::seal(&api.state().db)),
            });
        }
    }
}
