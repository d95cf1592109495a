//! Visits: a signed-in user notes a visit to a critter. Its visitor (set by the server), the
//! keeper of the critter's habitat and administrators read it; only its visitor changes or
//! deletes it; the critter is chosen on create only.

use super::critters::Critter;
use super::schema::visits;
use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use uuid::Uuid;

/// A visit to a critter, with the rules written as expressions: `read` is the SQL scope of
/// lists, counts, `GET` and relations (it crosses two relations, critter then habitat, and
/// each crossing also applies the critters' and the habitats' own read rules); `update` and
/// `delete` are judged on the stored row; `create` is left out, so any signed-in user creates
/// visits. Administrators pass every rule.
///
/// A visit for a critter the caller cannot read (a deleted one) is refused with the same 422
/// as for an id that does not exist. Its indexes serve the rule's crossing (visits by critter)
/// and the visitor's own visits.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = visits)]
#[resource(
    rules(
        read = "visitor_id = @me or critter.habitat.keeper_id = @me",
        write = "visitor_id = @me"
    ),
    index("critter_id"),
    index("visitor_id")
)]
pub struct Visit {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The critter visited (`expand=critter` embeds it): sent on create, never changed (a
    /// PATCH that sends it is a 422).
    #[resource(belongs_to(Critter), create_only)]
    pub critter_id: Uuid,
    /// A note (up to 500 characters).
    #[resource(max_len = 500)]
    pub note: String,
    /// The visitor: the server sets it to the caller (clients never send it).
    #[resource(set = me)]
    pub visitor_id: Uuid,
}
