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
//! | `retention` | [`Retention`] and the pruning of the oldest entries of a chain |
//!
//! This file holds the surface: the command line's writes are recorded too, the server seals
//! new entries into their chains (the chore `seal_history`) and prunes what the blueprints'
//! retention no longer keeps (`prune_history`), and `Api::prune_history`.

mod chain;
pub(crate) mod cli;
mod docs;
mod part;
mod read;
mod record;
mod retention;
pub(crate) mod store;

pub use retention::Retention;

use crate::api::{Api, Chore, Surface};
use crate::error::Error;
use part::Kept;

/// How often a serving API seals new entries into their chains.
const SEAL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// How often a serving API prunes the histories kept with a retention.
const PRUNE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// The history surface.
pub(crate) struct History;

impl Surface for History {
    /// A history records the command line's writes (roles granted, accounts created).
    fn records_writes(&self) -> bool {
        true
    }

    /// New entries sealed into their resources' chains, when some blueprint keeps history.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let kept = kept(api);
        if kept.is_empty() {
            return;
        }
        out.push(Chore {
            name: "seal_history",
            every: SEAL_INTERVAL,
            run: |api| Box::pin(chain::seal(&api.state().db)),
        });
        if kept.iter().any(|k| k.retention.is_some()) {
            out.push(Chore {
                name: "prune_history",
                every: PRUNE_INTERVAL,
                run: |api| Box::pin(api.prune_history()),
            });
        }
    }
}

/// The histories the API's blueprints keep.
fn kept(api: &Api) -> Vec<&Kept> {
    api.mounts()
        .iter()
        .flat_map(|m| m.faces())
        .filter_map(|f| f.downcast_ref::<Kept>())
        .collect()
}

impl Api {
    /// Removes the history entries that the blueprints' retention no longer keeps
    /// (`CrudBlueprint::history_retention`; the `history` feature), oldest first in each
    /// resource's chain and only sealed ones, in small batches; how many. The server does it
    /// hourly (with the `jobs` feature as the schedule `crudforge.prune_history`).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn prune_history(&self) -> Result<u64, Error> {
        let mut removed = 0;
        for k in kept(self) {
            if let Some(keep) = k.retention {
                removed += retention::prune(&self.state().db, k.table, keep).await?;
            }
        }
        Ok(removed)
    }
}
