//! SQL functions crudforge's queries call, and their registration on SQLite connections.

use diesel::sql_types::{Nullable, Text};

diesel::define_sql_function! {
    /// `lower(text)`.
    #[sql_name = "lower"]
    fn lower_text(x: Text) -> Text;
}

diesel::define_sql_function! {
    /// Unicode lower case on SQLite, whose own `lower()` folds ASCII letters only; `__ilike`
    /// uses it so that `É` matches `é` as it does in PostgreSQL. Registered on every pooled
    /// SQLite connection the pool opens.
    #[sql_name = "crudforge_lower"]
    fn unicode_lower(x: Text) -> Text;
}

diesel::define_sql_function! {
    /// [`unicode_lower()`] on a nullable column.
    #[sql_name = "crudforge_lower"]
    fn unicode_lower_nullable(x: Nullable<Text>) -> Nullable<Text>;
}

diesel::define_sql_function! {
    /// The hex SHA-256 of a text's UTF-8 bytes; the triggers that store token values as
    /// digests call it on SQLite (PostgreSQL has `sha256` built in).
    #[sql_name = "crudforge_sha256"]
    fn sha256_hex(x: Nullable<Text>) -> Nullable<Text>;
}

/// The hex SHA-256 of `value`'s UTF-8 bytes, as stored for token values on both backends.
pub fn digest_hex(value: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(value.as_bytes()) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Registers the SQL functions generated SQLite queries and the library's triggers call
/// (`crudforge_lower`, `crudforge_sha256`). The
/// database's pool does it for each connection it opens; call it on a connection opened
/// some other way before running generated queries on it.
///
/// # Errors
///
/// SQLite refuses the registration.
#[cfg(feature = "sqlite")]
pub(crate) fn register_sqlite_functions(
    conn: &mut diesel::sqlite::SqliteConnection,
) -> diesel::QueryResult<()> {
    // One registration serves both declarations: SQLite functions are untyped, and NULL
    // stays NULL.
    unicode_lower_nullable_utils::register_impl(conn, |x: Option<String>| {
        x.map(|s| s.to_lowercase())
    })?;
    sha256_hex_utils::register_impl(conn, |x: Option<String>| x.map(|s| digest_hex(&s)))
}
