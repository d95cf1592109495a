//! The Critter demo resource.

use super::schema::critters;
use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

/// The Critter demo resource: every generic CRUD feature on a small model.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
pub struct Critter {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its name.
    #[resource(max_len = 100)]
    pub name: String,
    /// Its species.
    #[resource(max_len = 50)]
    pub species: String,
    /// How cute (default 10).
    #[resource(default = 10)]
    pub cuteness_level: i32,
}
