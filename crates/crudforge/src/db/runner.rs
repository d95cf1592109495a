//! Where SQLite statements run: the [`Runner`] of each pooled SQLite connection, which also
//! sets the statement's deadline ([`deadline`](super::deadline)).
//!
//! Diesel's SQLite connection is synchronous; diesel-async wraps it and hands each statement
//! to a [`SpawnBlocking`] implementation. Tokio's blocking pool (diesel-async's default) costs
//! two thread hand-offs per statement, several times what a point read costs SQLite itself.
//! [`Runner::inline`] runs the statement at once on the calling thread instead: the answer is
//! ready when the future is first polled, so a request never yields inside a statement and an
//! unfinished statement can never be abandoned (dropping a request mid-query is safe).
//! [`Runner::pooled`] keeps the blocking pool, for callers that must not block their thread.

use super::deadline::with_deadline;
use diesel_async::sync_connection_wrapper::SpawnBlocking;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, TryFutureExt};
use std::error::Error;
use std::time::Duration;

/// Runs the statements of one SQLite connection, each bounded by the statement timeout.
#[derive(Debug, Clone, Copy)]
pub struct Runner {
    /// The statement timeout; `None` leaves statements unbounded.
    limit: Option<Duration>,
    /// Run on the calling thread (true) or on Tokio's blocking pool.
    inline: bool,
}

impl Runner {
    /// Statements run on the calling thread, each stopped after `limit`.
    pub(crate) fn inline(limit: Option<Duration>) -> Runner {
        Runner {
            limit,
            inline: true,
        }
    }

    /// Statements run on Tokio's blocking pool, each stopped after `limit`.
    pub(crate) fn pooled(limit: Option<Duration>) -> Runner {
        Runner {
            limit,
            inline: false,
        }
    }
}

impl SpawnBlocking for Runner {
    fn spawn_blocking<'a, R>(
        &mut self,
        task: impl FnOnce() -> R + Send + 'static,
    ) -> BoxFuture<'a, Result<R, Box<dyn Error + Send + Sync + 'static>>>
    where
        R: Send + 'static,
    {
        let limit = self.limit;
        if self.inline {
            let out = with_deadline(limit, task);
            return futures_util::future::ready(Ok(out)).boxed();
        }
        tokio::task::spawn_blocking(move || with_deadline(limit, task))
            .map_err(Box::from)
            .boxed()
    }

    fn get_runtime() -> Self {
        Runner::inline(None)
    }
}
