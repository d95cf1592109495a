//! Which database backends are compiled in (the `sqlite` and `postgres` features), and the
//! macros through which code names a backend only when it is.
//!
//! A `#[cfg(feature = "...")]` written in a macro's output tests the features of the crate
//! the macro expands in, not crudforge's. So [`with_conn!`](crate::with_conn) and the
//! derive's expansion reach the backends through the macros below, each defined once per
//! feature set: they keep or drop their input by crudforge's own features.

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!(
    "crudforge needs a database backend: enable its feature `sqlite`, `postgres`, or both \
     (both are on by default; `default-features = false` turned them off)"
);

/// Expands to its input when the `sqlite` feature is on, else to nothing.
#[cfg(feature = "sqlite")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_sqlite {
    ($($item:tt)*) => { $($item)* };
}

/// Expands to its input when the `sqlite` feature is on, else to nothing.
#[cfg(not(feature = "sqlite"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_sqlite {
    ($($item:tt)*) => {};
}

/// Expands to its input when the `postgres` feature is on, else to nothing.
#[cfg(feature = "postgres")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_postgres {
    ($($item:tt)*) => { $($item)* };
}

/// Expands to its input when the `postgres` feature is on, else to nothing.
#[cfg(not(feature = "postgres"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_postgres {
    ($($item:tt)*) => {};
}

/// `match`es a [`Conn`](crate::db::Conn) (a place expression) and runs the `sqlite` or the
/// `postgres` expression with `$c` bound to the connection of that backend; the arm of a
/// backend not compiled in is left out.
#[cfg(all(feature = "sqlite", feature = "postgres"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __by_backend {
    ($conn:expr, |$c:ident| sqlite => $sqlite:expr, postgres => $postgres:expr $(,)?) => {
        match $conn {
            $crate::db::Conn::Sqlite(ref mut __cf_obj) => {
                let $c: &mut $crate::db::SqliteConn = &mut **__cf_obj;
                $sqlite
            }
            $crate::db::Conn::Postgres(ref mut __cf_obj) => {
                let $c: &mut $crate::db::PgConn = &mut **__cf_obj;
                $postgres
            }
        }
    };
}

/// `match`es a [`Conn`](crate::db::Conn) (a place expression) and runs the `sqlite` or the
/// `postgres` expression with `$c` bound to the connection of that backend; the arm of a
/// backend not compiled in is left out.
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __by_backend {
    ($conn:expr, |$c:ident| sqlite => $sqlite:expr, postgres => $postgres:expr $(,)?) => {
        match $conn {
            $crate::db::Conn::Sqlite(ref mut __cf_obj) => {
                let $c: &mut $crate::db::SqliteConn = &mut **__cf_obj;
                $sqlite
            }
        }
    };
}

/// `match`es a [`Conn`](crate::db::Conn) (a place expression) and runs the `sqlite` or the
/// `postgres` expression with `$c` bound to the connection of that backend; the arm of a
/// backend not compiled in is left out.
#[cfg(all(not(feature = "sqlite"), feature = "postgres"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __by_backend {
    ($conn:expr, |$c:ident| sqlite => $sqlite:expr, postgres => $postgres:expr $(,)?) => {
        match $conn {
            $crate::db::Conn::Postgres(ref mut __cf_obj) => {
                let $c: &mut $crate::db::PgConn = &mut **__cf_obj;
                $postgres
            }
        }
    };
}
