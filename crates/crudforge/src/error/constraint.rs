//! Constraint failures (unique, foreign key, check, not null, exclusion) as 409 problems that
//! name the constraint's table and, where known, the field, on both backends.
//!
//! PostgreSQL names the table (and for most failures the columns) itself. SQLite names them in
//! the message of unique and not-null failures only; its foreign-key failures say nothing but
//! "FOREIGN KEY constraint failed" (and arrive as an unknown kind when an `ON DELETE RESTRICT`
//! action refused, which SQLite implements as a trigger). [`name_on_sqlite`] completes them
//! from the schema (`db::constraint`), for the generated handlers, which know the resource's table.

use super::Problem;
use crate::dialect::{
    plain, postgres_key_column as key_column, sqlite_columns, SQLITE_FOREIGN_KEY,
};
use actix_web::http::StatusCode;
use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind as K};

/// What kind of constraint refused the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unique,
    /// A delete (or key change) of a row that rows of the constraint's table still reference.
    Referenced,
    /// The written row refers to a row that does not exist.
    Missing,
    /// A foreign key, direction unknown.
    ForeignKey,
    Check,
    NotNull,
    Exclusion,
}

/// A constraint failure, read from a database error.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: Kind,
    table: Option<String>,
    field: Option<String>,
    constraint: Option<String>,
    message: String,
}

impl Failure {
    /// The constraint failure a database error reports, if it is one.
    pub(crate) fn of(kind: K, info: &(dyn DatabaseErrorInformation + Send + Sync)) -> Option<Self> {
        let message = info.message();
        let details = info.details();
        let mut f = Failure {
            kind: Kind::Unique,
            table: info.table_name().and_then(plain),
            field: info.column_name().and_then(plain),
            constraint: info.constraint_name().map(str::to_owned),
            message: message.to_owned(),
        };
        match kind {
            K::UniqueViolation => {
                let (table, field) = sqlite_columns(message, "UNIQUE constraint failed: ");
                f.table = f.table.or(table);
                f.field = f.field.or(field).or_else(|| key_column(details));
            }
            K::ForeignKeyViolation | K::RestrictViolation => {
                f.kind = match details {
                    Some(d) if d.contains("still referenced") => Kind::Referenced,
                    Some(d) if d.contains("not present") => Kind::Missing,
                    _ => Kind::ForeignKey,
                };
                if f.kind == Kind::Missing {
                    f.field = f.field.or_else(|| key_column(details));
                } else if f.kind == Kind::Referenced {
                    // The key named is the referenced table's, not a member of the request.
                    f.field = None;
                }
            }
            K::Unknown if message == SQLITE_FOREIGN_KEY => f.kind = Kind::ForeignKey,
            K::CheckViolation => {
                f.kind = Kind::Check;
                if let Some(name) = message.strip_prefix("CHECK constraint failed: ") {
                    f.constraint = f.constraint.or_else(|| Some(name.trim().to_owned()));
                }
            }
            K::NotNullViolation => {
                f.kind = Kind::NotNull;
                let (table, field) = sqlite_columns(message, "NOT NULL constraint failed: ");
                f.table = f.table.or(table);
                f.field = f.field.or(field);
            }
            K::ExclusionViolation => f.kind = Kind::Exclusion,
            _ => return None,
        }
        Some(f)
    }

    /// The 409 problem: `conflict_error`, `table` and `field` when known, the database's
    /// message as `debug`.
    pub(crate) fn problem(self) -> Problem {
        let at = |t: &Option<String>| t.as_ref().map(|t| format!(" in `{t}`")).unwrap_or_default();
        let detail = match self.kind {
            Kind::Unique => match &self.field {
                Some(f) => format!(
                    "A record with the same `{f}` already exists{}.",
                    at(&self.table)
                ),
                None => format!(
                    "A record with the same unique value already exists{}.",
                    at(&self.table)
                ),
            },
            Kind::Referenced => match &self.table {
                Some(t) => format!(
                    "The record is still referenced from `{t}`; delete those references first. \
                     Nothing was changed."
                ),
                None => "The record is still referenced by other records; delete those \
                         references first. Nothing was changed."
                    .to_owned(),
            },
            Kind::Missing => {
                match (&self.table, &self.field) {
                    (Some(t), Some(f)) => {
                        format!("`{f}` refers to a record that does not exist (a foreign key of `{t}`).")
                    }
                    _ => format!(
                        "The change refers to a record that does not exist{}.",
                        self.table
                            .as_ref()
                            .map(|t| format!(" (a foreign key of `{t}`)"))
                            .unwrap_or_default()
                    ),
                }
            }
            Kind::ForeignKey => format!(
                "The change refers to a record that does not exist, or removes one that is still \
                 referenced{}.",
                self.table
                    .as_ref()
                    .map(|t| format!(" (a foreign key of `{t}`)"))
                    .unwrap_or_default()
            ),
            Kind::Check => format!(
                "The change breaks the check constraint{}{}.",
                self.constraint
                    .as_ref()
                    .map(|c| format!(" `{c}`"))
                    .unwrap_or_default(),
                self.table
                    .as_ref()
                    .map(|t| format!(" of `{t}`"))
                    .unwrap_or_default()
            ),
            Kind::NotNull => match &self.field {
                Some(f) => format!("`{f}` may not be null{}.", at(&self.table)),
                None => format!("A required value is missing{}.", at(&self.table)),
            },
            Kind::Exclusion => format!(
                "The change conflicts with an existing record{}.",
                at(&self.table)
            ),
        };
        let mut p = Problem::new(StatusCode::CONFLICT, detail);
        p.table = self.table;
        p.field = self.field;
        p.debug = Some(self.message);
        p
    }
}
