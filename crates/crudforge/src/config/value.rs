//! The value grammar of settings: how one environment value is read into a typed setting,
//! shared by the library's keys and an application's own (see [`settings!`](crate::settings)).
//!
//! Every reader takes the key (for the error) and the raw value, and returns the typed value
//! or a [`ConfigError::Invalid`] naming the key, the accepted form and the value given. A value
//! that is unset, empty or only whitespace never reaches a reader: the key keeps its default.

use super::{ConfigError, LogFormat, SchemaCheck, Secret, SqliteLocking, SqliteSynchronous};
use crate::net::IpNet;
use std::fmt;
use std::path::PathBuf;

/// The value of `key` from `lookup`, or `None` when it is unset, empty or only whitespace
/// (such a key keeps its default).
pub fn get(lookup: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    lookup(key).filter(|v| !v.trim().is_empty())
}

pub(crate) fn invalid(key: &'static str, expected: &'static str, value: &str) -> ConfigError {
    ConfigError::Invalid {
        key,
        expected,
        value: value.to_owned(),
    }
}

/// A boolean, in any letter case: `true`, `1`, `yes`, `on` or `false`, `0`, `no`, `off`.
///
/// # Errors
///
/// Anything else: "expected a boolean: true or false".
pub fn boolean(key: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(key, "a boolean: true or false", v)),
    }
}

/// Text taken as it is (not trimmed).
///
/// # Errors
///
/// None; the signature matches the other readers.
pub fn text(_key: &'static str, v: &str) -> Result<String, ConfigError> {
    Ok(v.to_owned())
}

/// Text without its surrounding whitespace.
///
/// # Errors
///
/// None; the signature matches the other readers.
pub fn trimmed(_key: &'static str, v: &str) -> Result<String, ConfigError> {
    Ok(v.trim().to_owned())
}

/// A positive whole number of seconds.
///
/// # Errors
///
/// Anything else: "expected a positive whole number of seconds such as 3600".
pub fn seconds(key: &'static str, v: &str) -> Result<u64, ConfigError> {
    v.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, "a positive whole number of seconds such as 3600", v))
}

/// A whole number of seconds, 0 included.
///
/// # Errors
///
/// Anything else: "expected a whole number of seconds such as 30".
pub fn whole_seconds(key: &'static str, v: &str) -> Result<u64, ConfigError> {
    v.trim()
        .parse::<u64>()
        .ok()
        .ok_or_else(|| invalid(key, "a whole number of seconds such as 30", v))
}

/// A positive whole number.
///
/// # Errors
///
/// Anything else: "expected a positive whole number".
pub fn positive(key: &'static str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, "a positive whole number", v))
}

/// A whole number where 0 turns a limit off.
///
/// # Errors
///
/// Anything else: "expected a whole number (0 turns the limit off)".
pub fn count(key: &'static str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .ok_or_else(|| invalid(key, "a whole number (0 turns the limit off)", v))
}

/// A URL path starting with `/`, without whitespace (trimmed).
///
/// # Errors
///
/// Anything else: "expected a path starting with / such as /health".
pub fn path(key: &'static str, v: &str) -> Result<String, ConfigError> {
    let v = v.trim();
    if v.starts_with('/') && !v.contains(char::is_whitespace) {
        Ok(v.to_owned())
    } else {
        Err(invalid(key, "a path starting with / such as /health", v))
    }
}

/// A secret, byte for byte (a trailing newline counts as part of it).
///
/// # Errors
///
/// None; lengths are checked by [`Config::validate`](super::Config::validate).
pub fn secret(_key: &'static str, v: &str) -> Result<Option<Secret>, ConfigError> {
    Ok(Some(Secret::new(v)))
}

/// A token compared with a request header, without its surrounding whitespace.
pub(crate) fn trimmed_secret(_key: &'static str, v: &str) -> Result<Option<Secret>, ConfigError> {
    Ok(Some(Secret::new(v.trim())))
}

/// Text taken as it is, as a setting that may be unset.
pub(crate) fn some_text(_key: &'static str, v: &str) -> Result<Option<String>, ConfigError> {
    Ok(Some(v.to_owned()))
}

/// A file-system path, as it is.
pub(crate) fn file_path(_key: &'static str, v: &str) -> Result<PathBuf, ConfigError> {
    Ok(PathBuf::from(v))
}

pub(crate) fn slow_query_threshold(key: &'static str, v: &str) -> Result<f64, ConfigError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .ok_or_else(|| invalid(key, "a non-negative number of seconds such as 0.5", v))
}

pub(crate) fn body_size(key: &'static str, v: &str) -> Result<usize, ConfigError> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, "a positive number of bytes", v))
}

pub(crate) fn bcrypt_cost(key: &'static str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (super::MIN_BCRYPT_COST..=super::MAX_BCRYPT_COST).contains(n))
        .ok_or_else(|| invalid(key, "a whole number from 4 to 31", v))
}

pub(crate) fn password_length(key: &'static str, v: &str) -> Result<usize, ConfigError> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=super::MAX_MIN_PASSWORD_CHARS).contains(n))
        .ok_or_else(|| invalid(key, "a whole number from 1 to 64", v))
}

pub(crate) fn sqlite_synchronous(
    key: &'static str,
    v: &str,
) -> Result<SqliteSynchronous, ConfigError> {
    SqliteSynchronous::parse(v).ok_or_else(|| invalid(key, "one of OFF, NORMAL, FULL, EXTRA", v))
}

pub(crate) fn sqlite_locking(key: &'static str, v: &str) -> Result<SqliteLocking, ConfigError> {
    SqliteLocking::parse(v).ok_or_else(|| invalid(key, "SHARED or EXCLUSIVE", v))
}

pub(crate) fn schema_check(key: &'static str, v: &str) -> Result<SchemaCheck, ConfigError> {
    SchemaCheck::parse(v).ok_or_else(|| invalid(key, "warn, strict or off", v))
}

pub(crate) fn networks(key: &'static str, v: &str) -> Result<Vec<IpNet>, ConfigError> {
    crate::net::parse_list(v).map_err(|_| {
        invalid(
            key,
            "a comma-separated list of IP addresses or CIDR blocks such as 10.0.0.0/8, ::1",
            v,
        )
    })
}

pub(crate) fn log_format(key: &'static str, v: &str) -> Result<LogFormat, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(invalid(key, "text or json", v)),
    }
}

/// A comma-separated list of names: lower-case letters, digits and `_`, starting with a
/// letter, each once (`google,github`).
pub(crate) fn names(key: &'static str, v: &str) -> Result<Vec<String>, ConfigError> {
    distinct_list(
        key,
        v,
        |n| {
            n.len() <= 40
                && n.starts_with(|c: char| c.is_ascii_lowercase())
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        },
        "a comma-separated list of distinct names of lower-case letters, digits and _",
    )
}

/// A comma-separated list of role or domain names as the application spells them (`ADMIN`,
/// `acme`), each once; `*` stands for every one.
pub(crate) fn role_names(key: &'static str, v: &str) -> Result<Vec<String>, ConfigError> {
    distinct_list(
        key,
        v,
        |n| n.len() <= 100 && !n.contains(char::is_whitespace),
        "a comma-separated list of distinct names without spaces, or *",
    )
}

/// The comma-separated items of `v`, trimmed, empty ones left out, when each is
/// `well_formed` and none repeats; `expected` says what was asked otherwise.
fn distinct_list(
    key: &'static str,
    v: &str,
    well_formed: impl Fn(&str) -> bool,
    expected: &'static str,
) -> Result<Vec<String>, ConfigError> {
    let items: Vec<String> = v
        .split(',')
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    let unique = items
        .iter()
        .enumerate()
        .all(|(i, n)| !items[..i].contains(n));
    if items.iter().all(|n| well_formed(n)) && unique {
        Ok(items)
    } else {
        Err(invalid(key, expected, v))
    }
}

/// `*`, or a comma-separated list of origins (`scheme://host[:port]`, no path).
pub(crate) fn origins(key: &'static str, v: &str) -> Result<Vec<String>, ConfigError> {
    let origins: Vec<String> = v
        .split(',')
        .map(|o| o.trim().trim_end_matches('/').to_owned())
        .filter(|o| !o.is_empty())
        .collect();
    let well_formed = |o: &String| {
        o == "*"
            || o.split_once("://").is_some_and(|(scheme, host)| {
                matches!(scheme, "http" | "https")
                    && !host.is_empty()
                    && !host.contains(['/', ' ', '*', '?', '#'])
            })
    };
    if origins.iter().all(well_formed) && !(origins.len() > 1 && origins.iter().any(|o| o == "*")) {
        Ok(origins)
    } else {
        Err(invalid(
            key,
            "* or a comma-separated list of origins such as https://app.example.com",
            v,
        ))
    }
}

/// A value as an environment variable (and the Default column of [configuration.md](https://github.com/crudforge/crudforge/blob/main/docs/configuration.md))
/// writes it: `900`, `true`, `/health`, `NORMAL`; `unset` for a missing optional value and
/// `empty` for an empty list. Every type of a [`settings!`](crate::settings) field has one, so
/// the declared defaults can be checked against the documentation.
pub trait Shown {
    /// The value as written in an environment variable.
    fn shown(&self) -> String;
}

macro_rules! shown_by_display {
    ($($t:ty),*) => {
        $(impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        })*
    };
}
shown_by_display!(bool, u16, u32, u64, usize, i32, i64, f64, String, IpNet);

impl Shown for PathBuf {
    fn shown(&self) -> String {
        self.display().to_string()
    }
}

impl Shown for Secret {
    fn shown(&self) -> String {
        "<secret>".to_owned()
    }
}

impl Shown for SqliteSynchronous {
    fn shown(&self) -> String {
        self.as_sql().to_owned()
    }
}

impl Shown for SqliteLocking {
    fn shown(&self) -> String {
        self.as_str().to_owned()
    }
}

impl Shown for SchemaCheck {
    fn shown(&self) -> String {
        self.as_str().to_owned()
    }
}

impl Shown for LogFormat {
    fn shown(&self) -> String {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
        .to_owned()
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        self.as_ref()
            .map_or_else(|| "unset".to_owned(), Shown::shown)
    }
}

impl<T: Shown> Shown for Vec<T> {
    fn shown(&self) -> String {
        if self.is_empty() {
            "empty".to_owned()
        } else {
            self.iter().map(Shown::shown).collect::<Vec<_>>().join(", ")
        }
    }
}

/// The `Debug` form of a setting declared `secret`: only whether it is set and its length.
/// Only [`Secret`] values can be declared `secret`.
#[doc(hidden)]
pub struct Hidden<'a, T>(pub &'a T);

/// Settings types whose `Debug` can hide them.
#[doc(hidden)]
pub(crate) trait Hide {
    /// Writes the value without its content.
    fn hide(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl Hide for Secret {
    fn hide(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Hide for Option<Secret> {
    fn hide(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl<T: Hide> fmt::Debug for Hidden<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hide(f)
    }
}

/// The `Debug` form of a connection string declared `uri_password`: its password hidden.
#[doc(hidden)]
pub struct UriWithoutPassword<'a>(pub &'a Option<String>);

impl fmt::Debug for UriWithoutPassword<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.as_deref().map(redact_uri), f)
    }
}

/// Hides the password of a connection string.
pub(crate) fn redact_uri(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &uri[scheme_end + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &uri[..scheme_end + 3],
                    &userinfo[..colon],
                    &uri[at..]
                ),
                None => uri.to_owned(),
            }
        }
        _ => uri.to_owned(),
    }
}

/// Declares a struct of settings read from environment variables, one line per key, with the
/// library's grammar: the struct (each field documented with its key), its `Default`, a
/// `Debug` that hides secrets, `from_lookup`/`from_env` and the list of its keys.
///
/// Each line reads `KEY => field: Type = default, reader, visibility;` where `reader` is a
/// function `fn(&'static str, &str) -> Result<Type, ConfigError>`: a bare name (`boolean`,
/// `seconds`) is one of [`crudforge::config::value`](crate::config::value); your own is named
/// by a path of two or more segments (`self::parse_level`, `crate::levels::parse`); `visibility` is
/// `plain` (shown by `Debug`), `secret` (a [`Secret`](crate::config::Secret), shown by its
/// length only) or `uri_password` (an `Option<String>` connection string whose password is
/// hidden). Every field type implements `Debug` and [`Shown`]. The fields and the generated
/// functions have the struct's visibility.
///
/// ```
/// crudforge::settings! {
///     /// The shop's settings.
///     #[derive(Clone, PartialEq)]
///     pub struct ShopSettings {
///         /// Whether the catalogue is shown to visitors.
///         SHOP_OPEN => open: bool = false, boolean, plain;
///         /// Seconds a basket is kept.
///         SHOP_BASKET_TTL => basket_ttl: u64 = 3600, seconds, plain;
///     }
/// }
///
/// let s = ShopSettings::from_lookup(|k| (k == "SHOP_OPEN").then(|| "yes".to_owned())).unwrap();
/// assert!(s.open);
/// assert_eq!(s.basket_ttl, 3600);
/// let e = ShopSettings::from_lookup(|_| Some("maybe".to_owned())).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     r#"configuration key SHOP_OPEN: expected a boolean: true or false, got "maybe""#
/// );
/// assert_eq!(ShopSettings::KEYS, ["SHOP_OPEN", "SHOP_BASKET_TTL"]);
/// ```
#[macro_export]
macro_rules! settings {
    (@reader $one:ident) => { $crate::config::value::$one };
    (@reader $($segment:ident)::+) => { $($segment)::+ };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $key:ident => $field:ident : $ty:ty = $default:expr, $($reader:ident)::+, $show:ident;
            )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                #[doc = concat!("`", stringify!($key), "`:")]
                $(#[doc = $doc])*
                $vis $field: $ty,
            )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                $name { $($field: $default,)* }
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($name))
                    $(.field(stringify!($field), $crate::settings!(@show $show self.$field)))*
                    .finish()
            }
        }

        #[allow(dead_code)]
        impl $name {
            /// The environment keys of these settings, in declaration order.
            $vis const KEYS: &'static [&'static str] = &[$(stringify!($key)),*];

            /// Reads the settings from any key/value source (the environment, a map in
            /// tests); a key that is unset, empty or only whitespace keeps its default.
            ///
            /// # Errors
            ///
            /// The first malformed value, naming its key, the accepted form and the value.
            $vis fn from_lookup(
                lookup: impl Fn(&str) -> Option<String>,
            ) -> ::core::result::Result<Self, $crate::config::ConfigError> {
                #[allow(unused_mut)]
                let mut settings = <Self as ::core::default::Default>::default();
                $(
                    if let Some(v) = $crate::config::value::get(&lookup, stringify!($key)) {
                        settings.$field =
                            $crate::settings!(@reader $($reader)::+)(stringify!($key), &v)?;
                    }
                )*
                Ok(settings)
            }

            /// Reads the settings from the process environment.
            ///
            /// # Errors
            ///
            /// The first malformed value, naming its key, the accepted form and the value.
            $vis fn from_env() -> ::core::result::Result<Self, $crate::config::ConfigError> {
                Self::from_lookup(|key| ::std::env::var(key).ok())
            }

            /// Each key with its default as an environment variable writes it (see
            /// [`Shown`]($crate::config::value::Shown)).
            $vis fn shown_defaults() -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                let d = <Self as ::core::default::Default>::default();
                ::std::vec![$((stringify!($key), $crate::config::value::Shown::shown(&d.$field))),*]
            }
        }
    };
    (@show plain $value:expr) => { &$value };
    (@show secret $value:expr) => { &$crate::config::value::Hidden(&$value) };
    (@show uri_password $value:expr) => { &$crate::config::value::UriWithoutPassword(&$value) };
}
