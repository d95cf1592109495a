//! The shared state of a running API (configuration, database, token keys), reachable from
//! every handler and middleware; the bottom of the request-handling layers.

use crate::config::{Config, Secret};
use crate::db::Database;
use crate::error::Error;
use crate::jwt::Tokens;
use actix_web::{web, HttpRequest};
use std::sync::Arc;

/// Shared state every handler can reach as `web::Data<ApiState>`.
#[derive(Debug)]
pub struct ApiState {
    /// The configuration.
    pub config: Arc<Config>,
    /// The database.
    pub db: Database,
    /// The key that signs tokens.
    pub signing_key: Secret,
    /// Token signing and verification.
    pub tokens: Tokens,
    /// What the API's feeds share (wake-up, caps, tickets, shutdown).
    #[cfg(feature = "realtime")]
    pub(crate) realtime: Arc<crate::realtime::Hub>,
    /// Where file members' files are kept (the `files` feature).
    #[cfg(feature = "files")]
    pub(crate) files: crate::files::storage::Storage,
}

impl ApiState {
    /// The state of the `Api` serving `req`.
    ///
    /// # Errors
    ///
    /// 500 when the route is not mounted on an [`Api`](crate::Api).
    pub fn of(req: &HttpRequest) -> Result<&ApiState, Error> {
        req.app_data::<web::Data<ApiState>>()
            .map(|d| d.get_ref())
            .ok_or_else(|| Error::Internal("the route is not mounted on an Api".into()))
    }
}
