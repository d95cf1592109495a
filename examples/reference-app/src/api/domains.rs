//! Domains (tenants): the library's domain extended with the reference application's
//! optional fields.

use super::schema::app_domains;
use chrono::{DateTime, Utc};
use crudforge::crud::Window;
use crudforge::prelude::*;
use diesel::prelude::*;
use uuid::Uuid;

/// A domain (tenant) with the reference application's optional fields. Anyone may read
/// domains; only global administrators create, change and delete them.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = app_domains)]
#[resource(name = "Domain", rules = PublicReadAdminWrite)]
pub struct RefDomain {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Unique name, used at login.
    #[resource(max_len = 255)]
    pub name: String,
    /// Whether the domain is in use.
    #[resource(default = true)]
    pub active: bool,
    /// Kind of domain, at most 16 characters.
    #[resource(max_len = 16)]
    pub domain_type: Option<String>,
    /// Latitude.
    pub lat: Option<f64>,
    /// Longitude.
    pub lon: Option<f64>,
    /// Area as GeoJSON.
    pub area_geojson: Option<serde_json::Value>,
}

impl RefDomain {
    /// The domain with this name.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn by_name(db: &Database, name: &str) -> Result<Option<RefDomain>, Error> {
        let mut conn = db.get().await?;
        let conds = [Cond::eq("name", Arg::Text(name.to_owned()))];
        Ok(
            RefDomain::select(&mut conn, &conds, &[], Some(Window::first(1)))
                .await?
                .pop(),
        )
    }
}
