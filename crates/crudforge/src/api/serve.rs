//! Serving an `Api`: the HTTP server with a graceful shutdown on SIGTERM or Ctrl-C, and the
//! background work beside it (the schema check, the periodic chores, SQLite's upkeep).

use super::{Api, Chore};
use crate::error::Error;
use crate::readiness::Phase;
use std::sync::atomic::Ordering;

impl Api {
    /// Serves the application on `addr` until the process is stopped (see [`Api::server`]).
    /// When the API is ready (migrated) already, the [schema check](Api::apply_schema_check)
    /// runs first, and with `SCHEMA_CHECK=strict` a differing database stops it before it
    /// binds.
    ///
    /// # Errors
    ///
    /// The address cannot be bound, or `SCHEMA_CHECK=strict` refuses the database (an error
    /// of kind `InvalidData` whose message names every difference).
    pub async fn serve(self, addr: &str) -> std::io::Result<()> {
        if self.readiness.phase() == Phase::Ready {
            self.apply_schema_check()
                .await
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        }
        self.server(addr)?.await
    }

    /// Removes for good the rows of every mounted soft-delete resource that were deleted more
    /// than `SOFT_DELETE_RETENTION` seconds ago, and (with the `files` feature) the files they
    /// held; how many rows. Nothing when the setting is 0 (the default: deleted rows are kept).
    /// [`Api::server`] runs it in the background.
    ///
    /// # Errors
    ///
    /// Database errors (the resources purged before the error stay purged).
    pub async fn purge_deleted(&self) -> Result<u64, Error> {
        let retention = self.state.config.db.soft_delete_retention;
        if retention == 0 {
            return Ok(0);
        }
        let before = chrono::Utc::now() - chrono::Duration::seconds(i64::from(retention));
        let mut purged = 0;
        for m in &self.mounts {
            // Each surface may wrap the purge (the purged rows' files go with them).
            let mut purge = m.purge_deleted(&self.state.db, before);
            for surface in crate::SURFACES {
                purge = surface.around_purge(self, m.as_ref(), purge);
            }
            purged += purge.await?;
        }
        Ok(purged)
    }

    /// Binds `addr` and starts serving; await the returned server to wait until it stops.
    ///
    /// On SIGTERM or Ctrl-C the readiness turns 503 at once, the listener closes, and
    /// requests in flight get up to `SHUTDOWN_TIMEOUT` seconds to finish; on SQLite,
    /// `PRAGMA optimize` runs once more as the shutdown begins.
    ///
    /// In the background, once the API is [ready](Api::readiness) (an application that
    /// migrates after binding marks it so), it runs the [schema
    /// check](Api::apply_schema_check) (declared indexes included) unless the application ran
    /// it already; when `SCHEMA_CHECK=strict` refuses, it logs each difference as an error and
    /// stops the server, which then returns without an error, so an application that wants
    /// the error runs the check itself before it turns ready. Then on SQLite it runs the
    /// database's upkeep
    /// (`crate::db::maintenance::run`: WAL checkpoints, `PRAGMA optimize`) until it drains;
    /// with `SOFT_DELETE_RETENTION`, it also [purges](Api::purge_deleted) old deleted rows.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub fn server(&self, addr: &str) -> std::io::Result<actix_web::dev::Server> {
        let api = self.clone();
        // A request's head must arrive within 5 seconds (actix-web's default, kept), the whole
        // request within REQUEST_TIMEOUT (middleware::request_timeout).
        let server = actix_web::HttpServer::new(move || api.app())
            .disable_signals()
            .shutdown_timeout(self.state.config.ops.shutdown_timeout)
            .client_request_timeout(std::time::Duration::from_secs(5))
            .bind(addr)?
            .run();
        let handle = server.handle();
        let readiness = self.readiness.clone();
        let db = self.state.db.clone();
        let state = self.state.clone();
        actix_web::rt::spawn(async move {
            stop_signal().await;
            readiness.begin_shutdown();
            // What never finishes by itself (event streams) is ended, so that the requests in
            // flight drain within SHUTDOWN_TIMEOUT.
            for surface in crate::SURFACES {
                surface.shutdown(&state);
            }
            tracing::info!("shutting down: readiness is 503, finishing requests in flight");
            // SQLite's advice for connections about to close. Before the stop: once the server
            // has stopped, the application may exit before this task runs again.
            if let Err(e) = db.optimize().await {
                tracing::warn!(target: "crudforge::db", error = %e, "PRAGMA optimize failed");
            }
            handle.stop(true).await;
        });
        actix_web::rt::spawn(self.clone().background(server.handle()));
        Ok(server)
    }

    /// What a serving API does besides answering: once ready, the schema check (unless the
    /// application ran it; a strict refusal stops the server), then the database's upkeep
    /// until it drains.
    async fn background(self, server: actix_web::dev::ServerHandle) {
        loop {
            match self.readiness.phase() {
                Phase::Starting => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Phase::Ready => break,
                Phase::Draining => return,
            }
        }
        if !self.schema_checked.load(Ordering::SeqCst) {
            if let Err(e) = self.apply_schema_check().await {
                tracing::error!(target: "crudforge::schema", error = %e, "refusing to serve");
                self.readiness.begin_shutdown();
                server.stop(false).await;
                return;
            }
        }
        let readiness = self.readiness.clone();
        let upkeep = crate::db::maintenance::run(self.state.db.clone(), move || {
            readiness.phase() == Phase::Draining
        });
        let surfaces =
            futures_util::future::join_all(crate::SURFACES.iter().filter_map(|s| s.upkeep(&self)));
        // The chores run here, on each instance, unless a surface runs them.
        let chores = if crate::SURFACES.iter().any(|s| s.runs_chores()) {
            Vec::new()
        } else {
            self.chores()
        };
        let chores = futures_util::future::join_all(chores.into_iter().map(|c| self.chore_loop(c)));
        futures_util::future::join3(upkeep, chores, surfaces).await;
    }

    /// The periodic work of the server and of its surfaces: the purge of old soft-deleted
    /// rows (with `SOFT_DELETE_RETENTION`), hourly or every retention period when shorter;
    /// the pruning of expired single-use tickets, hourly; and what each surface adds
    /// ([`Surface::chores`]).
    pub(crate) fn chores(&self) -> Vec<Chore> {
        let mut out = vec![Chore {
            name: "prune_tickets",
            every: crate::spent::PRUNE_EVERY,
            run: |api| Box::pin(crate::spent::prune(&api.state().db)),
        }];
        let retention = self.state.config.db.soft_delete_retention;
        if retention > 0 {
            out.push(Chore {
                name: "purge_deleted",
                every: PURGE_INTERVAL.min(std::time::Duration::from_secs(u64::from(retention))),
                run: |api| Box::pin(api.purge_deleted()),
            });
        }
        for surface in crate::SURFACES {
            surface.chores(self, &mut out);
        }
        out
    }

    /// Runs `chore` now and then at its interval until the API drains.
    async fn chore_loop(&self, chore: Chore) {
        loop {
            match (chore.run)(self).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(target: "crudforge::db", chore = chore.name, rows = n, "removed old rows")
                }
                Err(e) => {
                    tracing::warn!(target: "crudforge::db", chore = chore.name, error = %e, "periodic work failed")
                }
            }
            let until = std::time::Instant::now() + chore.every;
            while std::time::Instant::now() < until {
                if self.readiness.phase() == Phase::Draining {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1).min(chore.every)).await;
            }
        }
    }

    /// Whether the API has begun to drain: the background work of a surface stops then.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn draining(&self) -> bool {
        self.readiness.phase() == Phase::Draining
    }
}

/// How often a serving API purges old soft-deleted rows (more often with a shorter
/// `SOFT_DELETE_RETENTION`).
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// Waits for Ctrl-C, or on Unix also SIGTERM (what orchestrators send).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = actix_web::rt::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = actix_web::rt::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = actix_web::rt::signal::ctrl_c().await;
    }
}
