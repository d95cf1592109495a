//! Constraint failures (unique, foreign key, check, not null, exclusion) as 409 problems that
//! name the constraint's table and, where known, the field, on both backends.
//!
//! A composite unique constraint (`#[resource(unique("event_id", "seat"))]`) names every
//! member: `field` is the first, and `errors` holds one entry per member (in a batch, each
//! points into the refused item), read from SQLite's message (`UNIQUE constraint failed:
//! tickets.event_id, tickets.seat`) or PostgreSQL's detail (`Key (event_id, seat)=...`).
//!
//! PostgreSQL names the table (and for most failures the columns) itself. SQLite names them in
//! the message of unique and not-null failures only; its foreign-key failures say nothing but
//! "FOREIGN KEY constraint failed" (and arrive as an unknown kind when an `ON DELETE RESTRICT`
//! action refused, which SQLite implements as a trigger). [`name_on_sqlite`] completes them
//! from the schema (`db::constraint`), for the generated handlers, which know the resource's table.

use super::{Problem, Violation};
use crate::dialect::{
    plain, postgres_key_column as key_column, sqlite_columns, unique_columns, SQLITE_FOREIGN_KEY,
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
    /// Every column of a unique constraint of several (empty otherwise).
    members: Vec<String>,
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
            members: Vec::new(),
            constraint: info.constraint_name().map(str::to_owned),
            message: message.to_owned(),
        };
        match kind {
            K::UniqueViolation => {
                let (table, field) = sqlite_columns(message, "UNIQUE constraint failed: ");
                f.table = f.table.or(table);
                f.field = f.field.or(field).or_else(|| key_column(details));
                let members = unique_columns(message, details);
                if members.len() > 1 {
                    f.field = members.first().cloned();
                    f.members = members;
                }
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
            Kind::Unique if !self.members.is_empty() => format!(
                "A record with the same {} already exists{}.",
                together(&self.members),
                at(&self.table)
            ),
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
        if !self.members.is_empty() {
            let why = format!("another record has the same {}", together(&self.members));
            p.errors = self
                .members
                .iter()
                .map(|m| Violation::new(m.as_str(), why.as_str()))
                .collect();
        }
        p.table = self.table;
        p.field = self.field;
        p.debug = Some(self.message);
        p
    }
}

/// The members of a composite unique constraint as a phrase: `` `a` and `b` ``,
/// `` `a`, `b` and `c` ``.
fn together(members: &[String]) -> String {
    let quoted: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database error's information, as a driver reports it.
    struct Info(&'static str, Option<&'static str>, Option<&'static str>);

    impl DatabaseErrorInformation for Info {
        fn message(&self) -> &str {
            self.0
        }
        fn details(&self) -> Option<&str> {
            self.1
        }
        fn hint(&self) -> Option<&str> {
            None
        }
        fn table_name(&self) -> Option<&str> {
            self.2
        }
        fn column_name(&self) -> Option<&str> {
            None
        }
        fn constraint_name(&self) -> Option<&str> {
            None
        }
        fn statement_position(&self) -> Option<i32> {
            None
        }
    }

    fn problem(info: Info) -> Problem {
        Failure::of(K::UniqueViolation, &info)
            .map(Failure::problem)
            .unwrap()
    }

    #[test]
    fn a_composite_unique_failure_names_every_member() {
        let lite = problem(Info(
            "UNIQUE constraint failed: tickets.event_id, tickets.seat",
            None,
            None,
        ));
        let pg = problem(Info(
            "duplicate key value violates unique constraint \"tickets_event_id_seat_key\"",
            Some("Key (event_id, seat)=(7c1e, 3) already exists."),
            Some("tickets"),
        ));
        for p in [lite, pg] {
            assert_eq!(p.status, 409);
            assert_eq!(
                p.detail,
                "A record with the same `event_id` and `seat` already exists in `tickets`."
            );
            assert_eq!(p.field.as_deref(), Some("event_id"));
            assert_eq!(p.table.as_deref(), Some("tickets"));
            let members: Vec<(&str, &str)> = p
                .errors
                .iter()
                .map(|v| (v.pointer.as_str(), v.field.as_str()))
                .collect();
            assert_eq!(members, [("/event_id", "event_id"), ("/seat", "seat")]);
            assert_eq!(
                p.errors[0].detail,
                "another record has the same `event_id` and `seat`"
            );
        }
        let three = problem(Info("UNIQUE constraint failed: t.a, t.b, t.c", None, None));
        assert!(
            three.detail.contains("`a`, `b` and `c`"),
            "{}",
            three.detail
        );
        let one = problem(Info("UNIQUE constraint failed: notes.title", None, None));
        assert_eq!(one.field.as_deref(), Some("title"));
        assert!(one.errors.is_empty());
    }
}
