//! E-mail identity: the one normalization of e-mail addresses that storage, uniqueness and
//! lookup share on both backends, and the step that normalizes the addresses stored before it.
//!
//! SQL cannot be trusted with this: SQLite's `lower()` folds ASCII letters only and
//! PostgreSQL's depends on the database's collation. So addresses are normalized in Rust,
//! stored normalized (the unique index on `lower(email)` then compares normalized values, the
//! same on both backends) and looked up normalized.

use crate::auth::normalize_email;
use crate::crud::{CrudBlueprint, Resource, Validate};
use crate::db::sql_types::Portable;
use crate::db::Database;
use crate::error::Error;
use crate::schema::users;
use crate::with_conn;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use std::collections::BTreeMap;
use uuid::Uuid;

/// The migration after which stored addresses are normalized once by
/// [`normalize_stored_emails`] (see [`Database::run_migrations`]).
const NORMALIZING_MIGRATION: &str = "20261125000200";

inventory::submit! {
    crate::db::AfterMigration {
        version: NORMALIZING_MIGRATION,
        name: "crudforge::users::normalize_stored_emails",
        run: |db| Box::pin(async move { normalize_stored_emails(db).await.map(|_| ()) }),
    }
}

/// Normalizes the `#[resource(email)]` members of a body and checks them again.
fn normalize_members(members: Vec<(&'static str, &mut String)>) -> Result<(), Error> {
    for (field, value) in members {
        *value = normalize_email(value);
        crate::crud::check_email(field, value)?;
    }
    Ok(())
}

/// Makes the generated create and update of a user model store its e-mail members
/// normalized (the first hooks of the blueprint; hooks added later see normalized values).
pub(crate) fn normalize_on_write<U: Resource>(crud: CrudBlueprint<U>) -> CrudBlueprint<U> {
    crud.before_create(|_ctx, mut input: U::Create| async move {
        normalize_members(input.emails_mut())?;
        Ok(input)
    })
    .before_update_input(|_ctx, mut input: U::Update| async move {
        normalize_members(input.emails_mut())?;
        Ok(input)
    })
}

/// What [`normalize_stored_emails`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmailNormalization {
    /// How many users' addresses were rewritten in their normalized form.
    pub normalized: usize,
    /// Users whose addresses normalize to the same one, each group oldest first. They are
    /// left as they are, never merged: an administrator decides (changes or deletes all but
    /// one). Until then, login and recovery with that address reach the group's user whose
    /// address is already normalized, if any, and no other.
    pub collisions: Vec<Vec<Uuid>>,
}

/// Rewrites every stored e-mail address that is not in its [normalized](normalize_email)
/// form, except where two or more users' addresses normalize to the same one: those are
/// reported (a warning log naming the users' ids, never their addresses) and left untouched.
///
/// [`Database::run_migrations`] runs it once, right after the migration that introduced the
/// normalization. Run it again after resolving the collisions it reported; it changes nothing
/// else on a second run. Each rewrite is its own statement and applies only if the address is
/// still the one read, so it is safe while the service runs.
///
/// # Errors
///
/// Database errors.
pub async fn normalize_stored_emails(db: &Database) -> Result<EmailNormalization, Error> {
    let mut conn = db.get().await?;
    let rows: Vec<(Uuid, String, DateTime<Utc>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            users::table
                .select((users::id, users::email, users::created_at))
                .order((users::created_at, users::id)),
            c,
        )
        .await
    })?;
    let mut groups: BTreeMap<String, Vec<(Uuid, String)>> = BTreeMap::new();
    for (id, email, _) in rows {
        groups
            .entry(normalize_email(&email))
            .or_default()
            .push((id, email));
    }
    let mut report = EmailNormalization::default();
    for (normalized, group) in groups {
        if group.len() > 1 {
            report
                .collisions
                .push(group.into_iter().map(|(id, _)| id).collect());
            continue;
        }
        let Some((id, stored)) = group.into_iter().next() else {
            continue;
        };
        if stored == normalized {
            continue;
        }
        let now = crate::crud::now();
        let written = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(
                    users::table
                        .filter(users::id.eq(Portable(id)))
                        .filter(users::email.eq(stored.clone())),
                )
                .set((
                    users::email.eq(normalized.clone()),
                    users::updated_at.eq(Portable(now)),
                )),
                c,
            )
            .await
        });
        match written.map_err(Error::from) {
            Ok(n) => report.normalized += n,
            // Another row holds an address the database's own `lower()` takes for this one
            // (a PostgreSQL collation that folds differently): a collision too.
            Err(e) if e.problem().status == 409 => report.collisions.push(vec![id]),
            Err(e) => return Err(e),
        }
    }
    for ids in &report.collisions {
        tracing::warn!(
            users = ?ids,
            "these users' e-mail addresses are one address once normalized; they were left \
             unchanged and need an administrator (see crudforge::users::normalize_stored_emails)"
        );
    }
    if report.normalized > 0 {
        tracing::info!(
            users = report.normalized,
            "stored e-mail addresses normalized"
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::normalize_email;

    #[test]
    fn one_form_per_address() {
        assert_eq!(normalize_email("JÖRG@Example.COM"), "jörg@example.com");
        // Decomposed (O + combining diaeresis) and precomposed are one address.
        assert_eq!(
            normalize_email("JO\u{308}RG@example.com"),
            "jörg@example.com"
        );
        // Final sigma: the same letter whatever follows it.
        assert_eq!(normalize_email("ΟΔΟΣ@x.gr"), normalize_email("οδοσ@x.gr"));
        assert_eq!(
            normalize_email(" a@b.io"),
            " a@b.io",
            "whitespace is kept (and refused)"
        );
        for s in ["İSTANBUL@x.tr", "ǅ@x.io", "ẞ@x.de", "Ω@x.io", "ﬃ@x.io"] {
            let once = normalize_email(s);
            assert_eq!(
                normalize_email(&once),
                once,
                "{s}: normalizing twice changes it"
            );
        }
    }
}
