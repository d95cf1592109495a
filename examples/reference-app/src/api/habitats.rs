//! Habitats: where critters live. Any signed-in user reads them; administrators create and
//! delete them (the blueprint makes POST and DELETE admin-only) and name a habitat's keeper;
//! its keeper may change its climate, and nothing else (member rules); each critter may name
//! one.

use super::critters::Critter;
use super::schema::habitats;
use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use uuid::Uuid;

/// A habitat. `GET /api/habitats/{id}?expand=critters` embeds its critters (the first 10
/// live ones, by creation);
/// deleting a habitat that critters name, deleted ones included, is a 409.
///
/// Its rules: signed-in users read habitats (the default); a habitat's keeper changes it, and
/// a member rule keeps its `name` and `keeper_id` to administrators, so a keeper changes the
/// climate only (sending the stored name back is no change). Administrators pass every rule.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = habitats)]
#[resource(
    rules(update = "keeper_id = @me", update(name, keeper_id) = "@admin"),
    has_many(critters = Critter, key = "habitat_id"),
    index("keeper_id")
)]
pub struct Habitat {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its name, unique (1 to 100 characters).
    #[resource(unique, min_len = 1, max_len = 100)]
    pub name: String,
    /// Its climate (at most 50 characters).
    #[resource(max_len = 50)]
    pub climate: String,
    /// The user who keeps it, if any (administrators set it, as they write habitats): they
    /// read the visits to its critters.
    pub keeper_id: Option<Uuid>,
}
