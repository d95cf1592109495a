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
    /// SQLite connection by [`register_sqlite_functions`].
    #[sql_name = "crudforge_lower"]
    fn unicode_lower(x: Text) -> Text;
}

diesel::define_sql_function! {
    /// [`unicode_lower`] on a nullable column.
    #[sql_name = "crudforge_lower"]
    fn unicode_lower_nullable(x: Nullable<Text>) -> Nullable<Text>;
}

/// Registers the SQL functions generated SQLite queries call (`crudforge_lower`). The
/// database's pool does it for each connection it opens; call it on a connection opened
/// some other way before running generated queries on it.
///
/// # Errors
///
/// SQLite refuses the registration.
pub fn register_sqlite_functions(
    conn: &mut diesel::sqlite::SqliteConnection,
) -> diesel::QueryResult<()> {
    // One registration serves both declarations: SQLite functions are untyped, and NULL
    // stays NULL.
    unicode_lower_nullable_utils::register_impl(conn, |x: Option<String>| {
        x.map(|s| s.to_lowercase())
    })
}
