//! The seam between the core and the optional surfaces: what a surface adds to the whole API
//! (`Surface`, each hook called by the `Api` at its moment), and the periodic work it hands in
//! (`Chore`).

use super::{Api, ApiState, Mount};
use crate::config::{Config, ConfigError};
use crate::error::Error;
use crate::openapi::ApiDoc;
use crate::operation::OperationIds;
use actix_web::web;

/// What an optional surface adds to the whole API: the seam's side for the API, as
/// [`Part`](crate::crud::shared::Part) is for one resource. The crate root lists the surfaces
/// compiled in (`SURFACES`); the `Api` calls each hook at its moment and names none of them.
/// Every hook does nothing by default.
pub(crate) trait Surface: Sync {
    /// Keeps the surface's state for a new API in `ext` (the feeds' hub, the files' storage).
    ///
    /// # Errors
    ///
    /// A setting of the surface's is invalid.
    fn start(
        &self,
        config: &Config,
        ext: &mut crate::state::Extensions,
    ) -> Result<(), ConfigError> {
        let _ = (config, ext);
        Ok(())
    }

    /// Registers the surface's routes on the whole API (the admin page).
    fn register(&self, api: &Api, cfg: &mut web::ServiceConfig) {
        let _ = (api, cfg);
    }

    /// Adds the operation ids of the surface's routes that the description leaves out.
    fn operation_ids(&self, api: &Api, ids: &mut OperationIds) {
        let _ = (api, ids);
    }

    /// What the surface does in the background while the API serves, until it drains
    /// ([`Api::draining`]).
    fn upkeep<'a>(&self, api: &'a Api) -> Option<futures_util::future::LocalBoxFuture<'a, ()>> {
        let _ = api;
        None
    }

    /// Wraps the purge of one mount's old deleted rows (`purge`, which gives how many), to
    /// do what must go with them (their stored files).
    fn around_purge<'a>(
        &self,
        api: &'a Api,
        mount: &'a dyn Mount,
        purge: futures_util::future::LocalBoxFuture<'a, Result<u64, Error>>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<u64, Error>> {
        let _ = (api, mount);
        purge
    }

    /// Whether the surface's blueprint parts may record writes (a feed), so that the command
    /// line's writes are told to the mounts ([`Mount::faces`]'s `Recording`s).
    fn records_writes(&self) -> bool {
        false
    }

    /// What the surface does when a graceful shutdown begins (ending event streams).
    fn shutdown(&self, state: &ApiState) {
        let _ = state;
    }

    /// Adds the surface's periodic work to `out` (pruning events): [`Chore`]s, which the
    /// server runs by itself, or a surface that [runs chores](Surface::runs_chores) does.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let _ = (api, out);
    }

    /// The work of a job of `kind` that this surface does itself (mail sends its messages as
    /// jobs of its own), with the job's `payload`; `None` for a kind it does not know.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without the jobs feature leaves it unused"
    )]
    fn job<'a>(
        &self,
        api: &'a Api,
        kind: &str,
        payload: &'a str,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (api, kind, payload);
        None
    }

    /// Adds what the surface [registers](Surface::register) to the description (the mail
    /// flows' routes).
    fn document(&self, api: &Api, doc: &mut ApiDoc) {
        let _ = (api, doc);
    }

    /// In the transaction that creates an account on a user blueprint (a sign-up, an
    /// administrator's create): what the surface writes with it (the mail that asks to verify
    /// the address), so that it is kept only if the account is.
    fn account_created<'a>(
        &self,
        state: &'a ApiState,
        conn: &'a mut crate::db::Conn,
        user: uuid::Uuid,
        email: &'a str,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (state, conn, user, email);
        None
    }

    /// Before a sign-in issues tokens to `user`, whose credentials were right (a password, a
    /// provider, a mailed link), or before a refresh renews a session of `user`
    /// (`entry`): the surface's refusal, if it has one (an address not verified while
    /// verification is required; a second factor still to give).
    fn admits<'a>(
        &self,
        state: &'a ApiState,
        user: uuid::Uuid,
        entry: Entry,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (state, user, entry);
        None
    }

    /// Whether this surface runs the API's [`Chore`]s itself, in its
    /// [upkeep](Surface::upkeep) (the jobs: as schedules, once per tick across instances),
    /// so that the server does not run them on each instance.
    fn runs_chores(&self) -> bool {
        false
    }
}

/// Where a session is being granted, told to the surfaces' refusals
/// ([`Surface::admits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A sign-in: a password, a provider, a mailed link or a password reset (`false`), or a
    /// passkey alone, which is a second factor by itself (`true`).
    SignIn {
        /// The sign-in passed a second factor.
        second_factor: bool,
    },
    /// A refresh of a session whose sign-in did (`true`) or did not pass a second factor.
    Refresh {
        /// The session passed a second factor.
        second_factor: bool,
    },
}

impl Entry {
    /// A sign-in by a password, a provider, a mailed link or a reset: no second factor yet.
    pub(crate) const SIGN_IN: Entry = Entry::SignIn {
        second_factor: false,
    };
}

/// A periodic piece of the server's own work (purging old soft-deleted rows, pruning
/// events): its name, how often it runs, and what it does (how many rows it removed).
#[derive(Clone, Copy)]
pub(crate) struct Chore {
    /// Its name, unique among the chores (`purge_deleted`).
    pub(crate) name: &'static str,
    /// How often it runs.
    pub(crate) every: std::time::Duration,
    /// Its work: how many rows it removed.
    pub(crate) run:
        for<'a> fn(&'a Api) -> futures_util::future::LocalBoxFuture<'a, Result<u64, Error>>,
}

impl std::fmt::Debug for Chore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chore")
            .field("name", &self.name)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}
