//! The Critter demo resource, with lifecycle hooks that tidy its input and log its changes.

use super::habitats::Habitat;
use super::schema::critters;
use super::visits::Visit;
use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use std::sync::Arc;
use uuid::Uuid;

/// The Critter demo resource: every generic CRUD feature on a small model, soft delete
/// included.
///
/// Its indexes serve the unfiltered list in the default order, and the documented filtered
/// list (`?species=cat&cuteness_level__gte=5`): its count, then its page (see
/// `docs/database.md`). Since critters keep deleted rows, every query also tests
/// `deleted_at IS NULL`, an equality for an index: `deleted_at` comes right after the other
/// equality columns, so the counts stay covering index searches and the pages come out of
/// their index in order. The migrations create them; the server warns if one is missing.
///
/// `scope=cute` is a named filter: the critters with a cuteness level of at least 50.
///
/// `q=` searches the critters' names and species (a name match ranks higher); the results
/// come best match first.
///
/// `expand=visits` embeds the visits to it that the caller may read (their own; all of them
/// for the keeper of its habitat and administrators).
///
/// `vet_notes` is for administrators: only they read it (it is absent from every answer others
/// get, and they cannot select, sort or filter by it) and only they write it ([`CritterRules`]).
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
#[resource(
    soft_delete,
    rules = CritterRules,
    has_many(visits = Visit, key = "critter_id"),
    index("deleted_at", "created_at", "id"),
    index("species", "deleted_at", "cuteness_level"),
    index("species", "deleted_at", "created_at", "id", "cuteness_level"),
    index("habitat_id"),
    scope(cute = "cuteness_level >= 50"),
    search("name", "species")
)]
pub struct Critter {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its name (1 to 100 characters).
    #[resource(min_len = 1, max_len = 100)]
    pub name: String,
    /// Its species.
    #[resource(max_len = 50)]
    pub species: String,
    /// How cute, from 0 to 100 (default 10).
    #[resource(default = 10, min = 0, max = 100)]
    pub cuteness_level: i32,
    /// When it was deleted (null while live): a DELETE keeps the row, an administrator can
    /// list it (`include_deleted=true`) and restore it.
    pub deleted_at: Option<DateTime<Utc>>,
    /// The habitat it lives in, if any (`expand=habitat` embeds it). A deleted critter keeps
    /// it, so a habitat that deleted critters name cannot be deleted either (409).
    #[resource(belongs_to(Habitat))]
    pub habitat_id: Option<Uuid>,
    /// Administrators' notes (up to 2,000 characters): read and written by administrators
    /// only.
    #[resource(read = admin, max_len = 2000)]
    pub vet_notes: Option<String>,
    /// A photo: a PNG, JPEG, GIF or WebP image of at most 5 MiB, uploaded as a
    /// `multipart/form-data` part; downloaded from its `url` under the critter's read rules,
    /// also as a thumbnail (`?thumb=128x128` or `?thumb=512x512`).
    #[resource(file(
        max_size = "5 MiB",
        types = ["image/png", "image/jpeg", "image/gif", "image/webp"],
        thumbs = ["128x128", "512x512"]
    ))]
    pub photo: Option<crudforge::files::File>,
}

/// The critters' rules: any signed-in user reads, writes and creates (the library's default),
/// only administrators send `vet_notes`, and only they move a critter to another habitat
/// (`habitat_id` in a PATCH): the keeper of a habitat reads the visits to its critters, so a
/// keeper who could move anyone's critter into their habitat would read its visits, other
/// users' notes included. A critter created in a habitat is placed there by its creator.
#[derive(Debug, Clone, Copy, Default)]
pub struct CritterRules;

impl Rules<Critter> for CritterRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    fn admin_fields(&self) -> &[&'static str] {
        &["vet_notes"]
    }

    fn admin_update_fields(&self) -> &[&'static str] {
        &["habitat_id"]
    }
}

/// Before create: trims surrounding whitespace from `name` and `species`, and refuses a name
/// that is blank once trimmed (422 naming `name`).
///
/// # Errors
///
/// 422 for a blank name.
pub async fn tidy_new(_ctx: HookCtx, mut input: CritterCreate) -> Result<CritterCreate> {
    input.name = tidy_name(&input.name)?;
    input.species = input.species.trim().to_owned();
    Ok(input)
}

/// Before update (input only: no read of the current row, no transaction): the same tidying
/// for the members a PATCH sends.
///
/// # Errors
///
/// 422 for a blank name.
pub async fn tidy_change(_ctx: HookCtx, mut input: CritterUpdate) -> Result<CritterUpdate> {
    if let Some(name) = &input.name {
        input.name = Some(tidy_name(name)?);
    }
    if let Some(species) = &input.species {
        input.species = Some(species.trim().to_owned());
    }
    Ok(input)
}

fn tidy_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid_field("name", "must not be blank"));
    }
    Ok(name.to_owned())
}

/// After commit: logs each committed change (where a real application would send mail).
///
/// # Errors
///
/// Never.
pub async fn announce(ctx: HookCtx, critter: Arc<Critter>) -> Result<()> {
    tracing::info!(
        operation = ?ctx.operation,
        id = %critter.id,
        name = %critter.name,
        by = ?ctx.user.as_ref().map(|u| u.id),
        "critter changed"
    );
    Ok(())
}
