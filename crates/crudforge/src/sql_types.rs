//! Portable SQL types: one `table!` serves SQLite and PostgreSQL.
//!
//! On PostgreSQL they are the native `uuid`, `timestamptz` and `jsonb`. On SQLite they are
//! `TEXT` in a fixed form: lowercase hyphenated UUIDs, RFC 3339 UTC timestamps with exactly six
//! fractional digits (so text order is time order), and compact JSON.
//!
//! ```
//! diesel::table! {
//!     use diesel::sql_types::*;
//!     use crudforge::sql_types::*;
//!
//!     notes (id) {
//!         id -> PortableUuid,
//!         created_at -> PortableTimestamp,
//!         body -> Nullable<PortableJson>,
//!     }
//! }
//! ```

use chrono::{DateTime, Utc};
use diesel::expression::AsExpression;
use diesel::internal::derives::as_expression::Bound;
use diesel::sql_types::Nullable;

/// A UUID: `uuid` on PostgreSQL, `TEXT` on SQLite.
#[derive(
    Debug, Clone, Copy, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId,
)]
#[diesel(postgres_type(oid = 2950, array_oid = 2951))]
#[diesel(sqlite_type(name = "Text"))]
pub struct PortableUuid;

/// A point in time: `timestamptz` on PostgreSQL, sortable RFC 3339 `TEXT` on SQLite.
#[derive(
    Debug, Clone, Copy, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId,
)]
#[diesel(postgres_type(oid = 1184, array_oid = 1185))]
#[diesel(sqlite_type(name = "Text"))]
pub struct PortableTimestamp;

/// A JSON document: `jsonb` on PostgreSQL, `TEXT` on SQLite.
#[derive(
    Debug, Clone, Copy, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId,
)]
#[diesel(postgres_type(oid = 3802, array_oid = 3807))]
#[diesel(sqlite_type(name = "Text"))]
pub struct PortableJson;

/// The SQLite text form of a timestamp: UTC, six fractional digits, `Z`.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn timestamp_text(t: &DateTime<Utc>) -> String {
    crate::timestamp::sqlite_text(t)
}

/// Wraps a value so Diesel binds it as a portable SQL type: `users::id.eq(Portable(id))`.
///
/// Reading needs no wrapper (`uuid::Uuid`, `DateTime<Utc>` and `serde_json::Value` load from
/// portable columns directly); binding does, because Rust's coherence rules forbid giving
/// foreign types Diesel's expression traits for new SQL types. Optional values bind as
/// `Portable(Some(v))` / `Portable(None::<Uuid>)` to nullable columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Portable<T>(pub T);

macro_rules! portable {
    ($rust:ty => $sql:ty) => {
        impl AsExpression<$sql> for Portable<$rust> {
            type Expression = Bound<$sql, Self>;
            fn as_expression(self) -> Self::Expression {
                Bound::new(self)
            }
        }
        impl AsExpression<Nullable<$sql>> for Portable<$rust> {
            type Expression = Bound<Nullable<$sql>, Self>;
            fn as_expression(self) -> Self::Expression {
                Bound::new(self)
            }
        }
        impl AsExpression<Nullable<$sql>> for Portable<Option<$rust>> {
            type Expression = Bound<Nullable<$sql>, Self>;
            fn as_expression(self) -> Self::Expression {
                Bound::new(self)
            }
        }
    };
}

portable!(uuid::Uuid => PortableUuid);
portable!(DateTime<Utc> => PortableTimestamp);
portable!(serde_json::Value => PortableJson);

/// Binds a [`Portable`] value on backend `$db` as the value it wraps.
macro_rules! portable_to_sql {
    ($db:ty: $($rust:ty => $sql:ty),*) => {$(
        impl ToSql<$sql, $db> for Portable<$rust> {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, $db>) -> serialize::Result {
                ToSql::<$sql, $db>::to_sql(&self.0, out)
            }
        }
        impl ToSql<Nullable<$sql>, $db> for Portable<$rust> {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, $db>) -> serialize::Result {
                ToSql::<$sql, $db>::to_sql(&self.0, out)
            }
        }
        impl ToSql<Nullable<$sql>, $db> for Portable<Option<$rust>> {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, $db>) -> serialize::Result {
                match &self.0 {
                    Some(v) => ToSql::<$sql, $db>::to_sql(v, out),
                    None => Ok(IsNull::Yes),
                }
            }
        }
    )*};
}

// Other modules' types that bind as a portable type (a file member's `File`).
#[allow(
    unused_imports,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) use {portable, portable_to_sql};

/// The portable types on SQLite: text in a fixed form.
#[cfg(feature = "sqlite")]
mod sqlite {
    use super::{Portable, PortableJson, PortableTimestamp, PortableUuid};
    use chrono::NaiveDateTime;
    use chrono::{DateTime, Utc};
    use diesel::deserialize::{self, FromSql};
    use diesel::serialize::{self, IsNull, Output, ToSql};
    use diesel::sql_types::{self, Nullable};
    use diesel::sqlite::Sqlite;

    portable_to_sql!(Sqlite: uuid::Uuid => PortableUuid, DateTime<Utc> => PortableTimestamp, serde_json::Value => PortableJson);

    impl ToSql<PortableUuid, Sqlite> for uuid::Uuid {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
            out.set_value(self.hyphenated().to_string());
            Ok(IsNull::No)
        }
    }

    impl FromSql<PortableUuid, Sqlite> for uuid::Uuid {
        fn from_sql(
            bytes: <Sqlite as diesel::backend::Backend>::RawValue<'_>,
        ) -> deserialize::Result<Self> {
            let text = <String as FromSql<sql_types::Text, Sqlite>>::from_sql(bytes)?;
            Ok(uuid::Uuid::parse_str(&text)?)
        }
    }

    impl ToSql<PortableTimestamp, Sqlite> for DateTime<Utc> {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
            out.set_value(super::timestamp_text(self));
            Ok(IsNull::No)
        }
    }

    impl FromSql<PortableTimestamp, Sqlite> for DateTime<Utc> {
        fn from_sql(
            bytes: <Sqlite as diesel::backend::Backend>::RawValue<'_>,
        ) -> deserialize::Result<Self> {
            let text = <String as FromSql<sql_types::Text, Sqlite>>::from_sql(bytes)?;
            // The form crudforge writes, read without chrono's general parser.
            if let Some(t) = crate::timestamp::parse_sqlite(&text) {
                return Ok(t);
            }
            if let Ok(t) = DateTime::parse_from_rfc3339(&text) {
                return Ok(t.with_timezone(&Utc));
            }
            // Values written by SQLite itself (CURRENT_TIMESTAMP) have no zone: they are UTC.
            let naive = NaiveDateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f")?;
            Ok(naive.and_utc())
        }
    }

    impl ToSql<PortableJson, Sqlite> for serde_json::Value {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
            out.set_value(serde_json::to_string(self)?);
            Ok(IsNull::No)
        }
    }

    impl FromSql<PortableJson, Sqlite> for serde_json::Value {
        fn from_sql(
            bytes: <Sqlite as diesel::backend::Backend>::RawValue<'_>,
        ) -> deserialize::Result<Self> {
            let text = <String as FromSql<sql_types::Text, Sqlite>>::from_sql(bytes)?;
            Ok(serde_json::from_str(&text)?)
        }
    }
}

/// The portable types on PostgreSQL: the native types.
#[cfg(feature = "postgres")]
mod pg {
    use super::{Portable, PortableJson, PortableTimestamp, PortableUuid};
    use chrono::{DateTime, Utc};
    use diesel::deserialize::{self, FromSql};
    use diesel::pg::{Pg, PgValue};
    use diesel::serialize::{self, IsNull, Output, ToSql};
    use diesel::sql_types::{self, Nullable};

    portable_to_sql!(Pg: uuid::Uuid => PortableUuid, DateTime<Utc> => PortableTimestamp, serde_json::Value => PortableJson);

    impl ToSql<PortableUuid, Pg> for uuid::Uuid {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
            ToSql::<sql_types::Uuid, Pg>::to_sql(self, out)
        }
    }

    impl FromSql<PortableUuid, Pg> for uuid::Uuid {
        fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
            <uuid::Uuid as FromSql<sql_types::Uuid, Pg>>::from_sql(bytes)
        }
    }

    impl ToSql<PortableTimestamp, Pg> for DateTime<Utc> {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
            ToSql::<sql_types::Timestamptz, Pg>::to_sql(self, out)
        }
    }

    impl FromSql<PortableTimestamp, Pg> for DateTime<Utc> {
        fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
            <DateTime<Utc> as FromSql<sql_types::Timestamptz, Pg>>::from_sql(bytes)
        }
    }

    impl ToSql<PortableJson, Pg> for serde_json::Value {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
            ToSql::<sql_types::Jsonb, Pg>::to_sql(self, out)
        }
    }

    impl FromSql<PortableJson, Pg> for serde_json::Value {
        fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
            <serde_json::Value as FromSql<sql_types::Jsonb, Pg>>::from_sql(bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn timestamp_text_is_fixed_width_and_sortable() {
        let a = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let b = a + chrono::Duration::microseconds(1);
        let c = a + chrono::Duration::days(400);
        let (ta, tb, tc) = (timestamp_text(&a), timestamp_text(&b), timestamp_text(&c));
        assert_eq!(ta, "2026-01-02T03:04:05.000000Z");
        assert_eq!(ta.len(), tb.len());
        assert!(ta < tb && tb < tc);
    }
}
