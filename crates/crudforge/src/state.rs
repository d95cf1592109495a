//! The shared state of a running API (configuration, database, token keys), reachable from
//! every handler and middleware; the bottom of the request-handling layers.

use crate::config::{Config, Secret};
use crate::db::Database;
use crate::error::Error;
use crate::jwt::Tokens;
use actix_web::{web, HttpRequest};
use std::any::Any;
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
    /// What the optional surfaces keep for the running API (the feeds' hub, the files'
    /// storage), each under its own type.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) ext: Extensions,
}

/// What optional surfaces keep for a running API, at most one value of each type: the seam's
/// place for their state, so that the core's state names none of them.
#[derive(Default, Clone)]
pub(crate) struct Extensions(Vec<Arc<dyn Any + Send + Sync>>);

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("values", &self.0.len())
            .finish()
    }
}

#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
impl Extensions {
    /// Keeps `value`, in place of an earlier value of its type.
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.retain(|v| !v.is::<T>());
        self.0.push(Arc::new(value));
    }

    /// The value of type `T`, if one is kept.
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.iter().find_map(|v| v.downcast_ref::<T>())
    }
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
