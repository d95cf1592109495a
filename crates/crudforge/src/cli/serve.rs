//! `serve`: listen at once with readiness 503, run pending migrations, check the schema, turn
//! ready; stop gracefully on SIGTERM or Ctrl-C.

use super::database::{connect, describe};
use super::{BoxError, Shared};
use crate::config::Config;

/// Listens on `bind` at once with readiness 503, runs pending migrations, applies the
/// schema check (`SCHEMA_CHECK`), then turns ready; stops gracefully on SIGTERM or Ctrl-C.
///
/// # Errors
///
/// Bad configuration, an unreachable database, a failed migration, a schema the strict check
/// refuses, or an address that cannot be bound.
pub(crate) async fn serve(shared: &Shared, config: Config, bind: &str) -> Result<(), BoxError> {
    let db = connect(&config).await?;
    let api = (shared.build)(config, db.clone())?;
    api.readiness().set_starting();
    let server = api.server(bind)?;
    let handle = server.handle();
    let running = actix_web::rt::spawn(server);
    tracing::info!("listening on http://{bind} (docs at http://{bind}/docs); migrating");
    match db.run_migrations(shared.migrations()).await {
        Ok(applied) => {
            if !applied.is_empty() {
                tracing::info!(count = applied.len(), "applied migrations");
            }
            // SCHEMA_CHECK: warn logs each difference; strict refuses to start.
            if let Err(e) = api.apply_schema_check().await {
                handle.stop(false).await;
                return Err(e.into());
            }
            api.readiness().set_ready();
            tracing::info!("ready");
        }
        Err(e) => {
            handle.stop(false).await;
            return Err(describe(api.config(), e));
        }
    }
    running.await??;
    Ok(())
}
