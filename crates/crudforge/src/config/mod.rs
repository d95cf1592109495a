//! Service configuration: the contract's keys, read from the environment or built in code.
//!
//! `settings` is the table of every key (its section, field, type, default, reader and
//! whether `Debug` hides it); [`value`] is the grammar a value is read with, which
//! applications use for their own settings through [`settings!`](crate::settings).

mod providers;
mod settings;
mod signing_key;
pub mod value;
mod webhooks;

/// A network of trusted proxies ([`HttpSettings::trusted_proxies`]): `"10.0.0.0/8".parse()`,
/// or `IpNet::from(addr)` for a single address.
pub use ipnet::IpNet;
pub use providers::ProviderSettings;
pub use settings::{AuthSettings, DbSettings, HttpSettings, ListSettings, OpsSettings};
use std::fmt;
use std::path::PathBuf;
use value::invalid;
pub use webhooks::WebhookSettings;

/// OpenAPI versions the description generator can produce.
pub(crate) const SUPPORTED_OPENAPI_VERSIONS: &[&str] = &["3.0.3"];

/// Smallest accepted length of a signing secret, in bytes.
pub(crate) const MIN_SECRET_LEN: usize = 32;

/// The lowest `BCRYPT_COST` (the lowest cost bcrypt defines).
pub(crate) const MIN_BCRYPT_COST: u32 = 4;

/// The highest `BCRYPT_COST` (the highest cost bcrypt defines).
pub(crate) const MAX_BCRYPT_COST: u32 = 31;

/// The default `PASSWORD_MIN_LENGTH`, in characters (ASVS 5.0 V6.2.1).
pub(crate) const DEFAULT_MIN_PASSWORD_CHARS: usize = 8;

/// The highest `PASSWORD_MIN_LENGTH`, in characters: every password of 64 characters fits
/// the longest password accepted (1024 bytes) whatever its script.
pub(crate) const MAX_MIN_PASSWORD_CHARS: usize = 64;

/// Everything the service reads from its environment, in sections.
///
/// Build it with [`Config::from_env`], with [`Config::from_lookup`] (any key/value source), or
/// in code starting from [`Config::default`] and setting fields
/// (`config.list.max_page_size = 50`). Defaults are documented in [configuration.md](https://github.com/crudforge/crudforge/blob/main/docs/configuration.md).
/// New keys may be added to any section without a breaking change, so the structs cannot be
/// written as literals outside this crate.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Config {
    /// HTTP: the API description, request bodies and time, proxies, CORS, retries, `DEBUG`.
    pub http: HttpSettings,
    /// The database: where it is, SQLite's settings, timeouts, query monitoring.
    pub db: DbSettings,
    /// Authentication: secrets, token lifetimes, password hashing and length, throttling.
    pub auth: AuthSettings,
    /// List requests: page sizes and the limits on filters.
    pub list: ListSettings,
    /// Operations: health and readiness routes, metrics, logs, shutdown.
    pub ops: OpsSettings,
    /// Sign-in providers (`providers` feature): one for each name in `AUTH_PROVIDERS`, from
    /// its `AUTH_PROVIDER_<NAME>_*` keys.
    pub providers: Vec<ProviderSettings>,
    /// Webhook subscriptions (`webhooks` feature): one for each name in `WEBHOOKS`, from its
    /// `WEBHOOK_<NAME>_*` keys.
    pub webhooks: Vec<WebhookSettings>,
}

impl Config {
    /// The configuration changed by `change`, for building one in an expression:
    /// `Config::default().with(|c| c.http.debug = true)`.
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut Config)) -> Config {
        change(&mut self);
        self
    }
}

/// How log lines are written (`LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// SQLite's `synchronous` setting: how far each commit waits for the disk.
///
/// In WAL mode, `Normal` (the default) survives a crash of the process; a power loss or an
/// operating-system crash can lose the last commits but never corrupts the file. `Full` also
/// keeps those commits, at a cost in write speed (see [database.md](https://github.com/crudforge/crudforge/blob/main/docs/database.md)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SqliteSynchronous {
    /// `OFF`: hands writes to the operating system and goes on.
    Off,
    /// `NORMAL`: syncs at WAL checkpoints.
    #[default]
    Normal,
    /// `FULL`: syncs the WAL on every commit.
    Full,
    /// `EXTRA`: `FULL`, and also syncs the directory after a rollback journal is deleted.
    Extra,
}

impl SqliteSynchronous {
    /// The value as SQLite spells it in `PRAGMA synchronous`.
    pub(crate) fn as_sql(self) -> &'static str {
        match self {
            SqliteSynchronous::Off => "OFF",
            SqliteSynchronous::Normal => "NORMAL",
            SqliteSynchronous::Full => "FULL",
            SqliteSynchronous::Extra => "EXTRA",
        }
    }

    fn parse(value: &str) -> Option<SqliteSynchronous> {
        [
            SqliteSynchronous::Off,
            SqliteSynchronous::Normal,
            SqliteSynchronous::Full,
            SqliteSynchronous::Extra,
        ]
        .into_iter()
        .find(|s| s.as_sql().eq_ignore_ascii_case(value.trim()))
    }
}

/// Whether other processes may use the SQLite file while this process has it open
/// (`SQLITE_LOCKING`).
///
/// `Shared` (the default) lets them: the `sqlite3` shell, a backup or replication tool, the
/// application's own command line or a second server on the same machine. Every statement
/// then takes and releases SQLite's locks with system calls, so that other processes see
/// them. `Exclusive` makes the process the file's only user: it holds one lock on the file
/// for as long as it has the file open, and every other process that tries to use the file
/// fails with "database is locked". In exchange statements take their locks in memory,
/// without a system call, which is markedly faster (see the
/// `db::locking` documentation and [database.md](https://github.com/crudforge/crudforge/blob/main/docs/database.md)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SqliteLocking {
    /// Other processes may open and use the file at the same time.
    #[default]
    Shared,
    /// This process is the file's only user while it has the file open.
    Exclusive,
}

impl SqliteLocking {
    /// The value as `SQLITE_LOCKING` spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SqliteLocking::Shared => "SHARED",
            SqliteLocking::Exclusive => "EXCLUSIVE",
        }
    }

    /// `SHARED` or `EXCLUSIVE`, in any case; `None` for anything else.
    pub(crate) fn parse(value: &str) -> Option<SqliteLocking> {
        [SqliteLocking::Shared, SqliteLocking::Exclusive]
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(value.trim()))
    }
}

/// What a server does when the live database differs from the mounted resources
/// (`SCHEMA_CHECK`): a missing table or column, a wrong nullability or column type, a missing
/// declared index (see [`Api::check_schema`](crate::Api::check_schema)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SchemaCheck {
    /// Logs one warning per difference and starts anyway (the default).
    #[default]
    Warn,
    /// Refuses to start, naming every difference.
    Strict,
    /// Does not compare.
    Off,
}

impl SchemaCheck {
    /// The value as `SCHEMA_CHECK` spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SchemaCheck::Warn => "warn",
            SchemaCheck::Strict => "strict",
            SchemaCheck::Off => "off",
        }
    }

    /// `warn`, `strict` or `off`, in any case; `None` for anything else.
    pub(crate) fn parse(value: &str) -> Option<SchemaCheck> {
        [SchemaCheck::Warn, SchemaCheck::Strict, SchemaCheck::Off]
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(value.trim()))
    }
}

/// A secret value whose `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps secret bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Secret(bytes.into())
    }

    /// The secret bytes.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<{} bytes>)", self.0.len())
    }
}

/// Why a configuration could not be used. Every variant names the key at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value could not be parsed into its type.
    #[error("configuration key {key}: expected {expected}, got {value:?}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The form the key accepts.
        expected: &'static str,
        /// What was given.
        value: String,
    },
    /// A secret is shorter than 32 bytes.
    #[error(
        "configuration key {key}: the secret is {len} bytes long; it must be at least {MIN_SECRET_LEN} bytes \
         (unset it to let the service generate a strong key in its data directory)"
    )]
    SecretTooShort {
        /// The key.
        key: &'static str,
        /// The given length.
        len: usize,
    },
    /// `OPENAPI_VERSION` names a version the generator cannot produce.
    #[error("configuration key OPENAPI_VERSION: {value:?} is not supported; supported versions: {}", SUPPORTED_OPENAPI_VERSIONS.join(", "))]
    UnsupportedOpenApiVersion {
        /// What was given.
        value: String,
    },
    /// The generated key file could not be read or written.
    #[error("signing key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// # Errors
    ///
    /// A malformed value, a too-short secret or an unsupported OpenAPI version.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|key| std::env::var(key).ok())
    }

    /// Reads the configuration from any key/value source (the environment, a map in tests).
    /// Empty values count as unset.
    ///
    /// # Errors
    ///
    /// A malformed value, a too-short secret or an unsupported OpenAPI version.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let auth = AuthSettings::from_lookup(&lookup)?;
        let providers = auth
            .auth_providers
            .iter()
            .map(|name| ProviderSettings::from_lookup(name, &lookup))
            .collect::<Result<_, _>>()?;
        let ops = OpsSettings::from_lookup(&lookup)?;
        let webhooks = ops
            .webhooks
            .iter()
            .map(|name| WebhookSettings::from_lookup(name, &lookup))
            .collect::<Result<_, _>>()?;
        let cfg = Config {
            http: HttpSettings::from_lookup(&lookup)?,
            db: DbSettings::from_lookup(&lookup)?,
            auth,
            list: ListSettings::from_lookup(&lookup)?,
            ops,
            providers,
            webhooks,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the values that have rules beyond their type: secret lengths, the OpenAPI
    /// version, page sizes. [`Config::from_lookup`] calls it; call it after building a
    /// configuration in code.
    ///
    /// # Errors
    ///
    /// The first rule that does not hold.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, secret) in [
            ("JWT_SECRET_KEY", &self.auth.jwt_secret_key),
            ("SECRET_KEY", &self.auth.secret_key),
        ] {
            if let Some(s) = secret {
                if s.expose().len() < MIN_SECRET_LEN {
                    return Err(ConfigError::SecretTooShort {
                        key,
                        len: s.expose().len(),
                    });
                }
            }
        }
        if !SUPPORTED_OPENAPI_VERSIONS.contains(&self.http.openapi_version.as_str()) {
            return Err(ConfigError::UnsupportedOpenApiVersion {
                value: self.http.openapi_version.clone(),
            });
        }
        if self.list.default_page_size > self.list.max_page_size {
            return Err(invalid(
                "DEFAULT_PAGE_SIZE",
                "a page size no larger than MAX_PAGE_SIZE",
                &self.list.default_page_size.to_string(),
            ));
        }
        if !(1..=MAX_MIN_PASSWORD_CHARS).contains(&self.auth.password_min_length) {
            return Err(invalid(
                "PASSWORD_MIN_LENGTH",
                "a whole number from 1 to 64",
                &self.auth.password_min_length.to_string(),
            ));
        }
        if !self.ops.health_endpoint_path.starts_with('/') {
            return Err(invalid(
                "HEALTH_ENDPOINT_PATH",
                "a path starting with /",
                &self.ops.health_endpoint_path,
            ));
        }
        for (key, path) in [
            ("METRICS_PATH", &self.ops.metrics_path),
            ("READINESS_PATH", &self.ops.readiness_path),
        ] {
            if !path.starts_with('/') {
                return Err(invalid(key, "a path starting with /", path));
            }
        }
        if self.ops.readiness_path == self.ops.health_endpoint_path
            || (self.ops.metrics_enabled && self.ops.metrics_path == self.ops.readiness_path)
        {
            return Err(invalid(
                "READINESS_PATH",
                "a path other than HEALTH_ENDPOINT_PATH and METRICS_PATH",
                &self.ops.readiness_path,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = from(&[]).unwrap();
        assert_eq!(c.list.default_page_size, 25);
        assert_eq!(c.list.max_page_size, 100);
        assert_eq!(c.ops.health_endpoint_path, "/health");
        assert!(c.ops.health_endpoint_enabled);
        assert!(!c.http.debug);
        assert!(c.auth.jwt_secret_key.is_none());
        assert_eq!(c.auth.login_max_failures_per_account_and_address, 10);
        assert_eq!(c.auth.login_max_failures_per_account, 100);
        assert_eq!(c.auth.login_max_failures_per_address, 50);
        assert_eq!(c.auth.login_failure_window, 900);
        assert!(c.http.trusted_proxies.is_empty());
        assert!(!c.ops.metrics_enabled);
        assert_eq!(c.ops.metrics_path, "/metrics");
        assert!(c.ops.metrics_token.is_none());
        assert!(c.http.cors_allowed_origins.is_empty());
        assert_eq!(c.ops.log_format, LogFormat::Text);
        assert_eq!(c.ops.readiness_path, "/ready");
        assert_eq!(c.ops.shutdown_timeout, 30);
    }

    #[test]
    fn operations_settings_are_read_and_checked() {
        let c = from(&[
            ("METRICS_ENABLED", "true"),
            ("METRICS_PATH", "/internal/metrics"),
            ("METRICS_TOKEN", "scrape-me"),
            (
                "CORS_ALLOWED_ORIGINS",
                "https://app.example.com, http://localhost:3000/",
            ),
            ("LOG_FORMAT", "JSON"),
            ("READINESS_PATH", "/readyz"),
            ("SHUTDOWN_TIMEOUT", "5"),
        ])
        .unwrap();
        assert!(c.ops.metrics_enabled);
        assert_eq!(c.ops.metrics_path, "/internal/metrics");
        assert_eq!(c.ops.metrics_token.unwrap().expose(), b"scrape-me");
        assert_eq!(
            c.http.cors_allowed_origins,
            ["https://app.example.com", "http://localhost:3000"]
        );
        assert_eq!(c.ops.log_format, LogFormat::Json);
        assert_eq!(c.ops.readiness_path, "/readyz");
        assert_eq!(c.ops.shutdown_timeout, 5);
        assert_eq!(
            from(&[("CORS_ALLOWED_ORIGINS", "*")])
                .unwrap()
                .http
                .cors_allowed_origins,
            ["*"]
        );
        for (key, value) in [
            ("METRICS_ENABLED", "maybe"),
            ("METRICS_PATH", "metrics"),
            ("CORS_ALLOWED_ORIGINS", "app.example.com"),
            ("CORS_ALLOWED_ORIGINS", "*, https://app.example.com"),
            ("CORS_ALLOWED_ORIGINS", "https://app.example.com/path"),
            ("LOG_FORMAT", "xml"),
            ("READINESS_PATH", "ready"),
            ("SHUTDOWN_TIMEOUT", "-1"),
            ("READINESS_PATH", "/health"),
        ] {
            let err = from(&[(key, value)]).unwrap_err().to_string();
            assert!(err.contains(key), "{key}={value}: {err}");
        }
    }

    #[test]
    fn every_key_is_read_and_typed() {
        let c = from(&[
            ("API_TITLE", "Zoo"),
            ("API_VERSION", "2.1"),
            ("OPENAPI_VERSION", "3.0.3"),
            ("ORM_DATABASE_URI", "postgres://u:pw@h/db"),
            ("SECRET_KEY", "s".repeat(32).as_str()),
            ("JWT_SECRET_KEY", "j".repeat(40).as_str()),
            ("JWT_ACCESS_TOKEN_EXPIRES", "60"),
            ("JWT_REFRESH_TOKEN_EXPIRES", "120"),
            ("HEALTH_ENDPOINT_ENABLED", "false"),
            ("HEALTH_ENDPOINT_PATH", "/status"),
            ("ORM_PERFORMANCE_MONITORING", "true"),
            ("ORM_SLOW_QUERY_THRESHOLD", "0.25"),
            ("DEBUG", "1"),
            ("DEFAULT_PAGE_SIZE", "10"),
            ("MAX_PAGE_SIZE", "50"),
            ("MAX_BODY_SIZE", "2048"),
            ("BCRYPT_COST", "4"),
            ("SQLITE_SYNCHRONOUS", "full"),
            ("SQLITE_LOCKING", "Exclusive"),
            ("SCHEMA_CHECK", "Strict"),
            ("IDEMPOTENCY_KEY_TTL", "600"),
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", "3"),
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT", "5"),
            ("LOGIN_MAX_FAILURES_PER_ADDRESS", "0"),
            ("LOGIN_FAILURE_WINDOW", "60"),
            ("TRUSTED_PROXIES", "10.0.0.0/8, ::1"),
        ])
        .unwrap();
        assert_eq!(c.http.idempotency_key_ttl, 600);
        assert_eq!(c.http.api_title, "Zoo");
        assert_eq!(c.http.api_version, "2.1");
        assert_eq!(c.db.database_uri.as_deref(), Some("postgres://u:pw@h/db"));
        assert_eq!(c.auth.secret_key.as_ref().unwrap().expose().len(), 32);
        assert_eq!(c.auth.jwt_secret_key.as_ref().unwrap().expose().len(), 40);
        assert_eq!(c.auth.jwt_access_token_expires, 60);
        assert_eq!(c.auth.jwt_refresh_token_expires, 120);
        assert!(!c.ops.health_endpoint_enabled);
        assert_eq!(c.ops.health_endpoint_path, "/status");
        assert!(c.db.orm_performance_monitoring);
        assert!((c.db.orm_slow_query_threshold - 0.25).abs() < f64::EPSILON);
        assert!(c.http.debug);
        assert_eq!(c.list.default_page_size, 10);
        assert_eq!(c.list.max_page_size, 50);
        assert_eq!(c.http.max_body_size, 2048);
        assert_eq!(c.auth.bcrypt_cost, 4);
        assert_eq!(c.db.sqlite_synchronous, SqliteSynchronous::Full);
        assert_eq!(c.db.sqlite_locking, SqliteLocking::Exclusive);
        assert_eq!(c.db.schema_check, SchemaCheck::Strict);
        assert_eq!(c.auth.login_max_failures_per_account_and_address, 3);
        assert_eq!(c.auth.login_max_failures_per_account, 5);
        assert_eq!(c.auth.login_max_failures_per_address, 0);
        assert_eq!(c.auth.login_failure_window, 60);
        assert_eq!(c.http.trusted_proxies.len(), 2);
        assert_eq!(
            from(&[]).unwrap().db.sqlite_synchronous,
            SqliteSynchronous::Normal
        );
        assert_eq!(from(&[]).unwrap().db.sqlite_locking, SqliteLocking::Shared);
        assert_eq!(from(&[]).unwrap().db.schema_check, SchemaCheck::Warn);
        assert_eq!(
            from(&[("SCHEMA_CHECK", " OFF ")]).unwrap().db.schema_check,
            SchemaCheck::Off
        );
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("pw@"), "password leaked in {dbg}");
        assert!(!dbg.contains("jjjj"), "secret leaked in {dbg}");
    }

    #[test]
    fn malformed_values_name_the_key_and_form() {
        let e = from(&[("JWT_ACCESS_TOKEN_EXPIRES", "abc")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("JWT_ACCESS_TOKEN_EXPIRES"), "{e}");
        assert!(e.contains("seconds"), "{e}");
        let e = from(&[("HEALTH_ENDPOINT_ENABLED", "maybe")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("HEALTH_ENDPOINT_ENABLED"), "{e}");
        assert!(e.contains("true or false"), "{e}");
        let e = from(&[("ORM_SLOW_QUERY_THRESHOLD", "-1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("ORM_SLOW_QUERY_THRESHOLD"), "{e}");
        let e = from(&[("HEALTH_ENDPOINT_PATH", "health")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("HEALTH_ENDPOINT_PATH"), "{e}");
        let e = from(&[("SQLITE_SYNCHRONOUS", "sometimes")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("SQLITE_SYNCHRONOUS"), "{e}");
        assert!(e.contains("OFF, NORMAL, FULL, EXTRA"), "{e}");
        let e = from(&[("SQLITE_LOCKING", "private")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("SQLITE_LOCKING"), "{e}");
        assert!(e.contains("SHARED or EXCLUSIVE"), "{e}");
        let e = from(&[("SCHEMA_CHECK", "loud")]).unwrap_err().to_string();
        assert!(e.contains("SCHEMA_CHECK"), "{e}");
        assert!(e.contains("warn, strict or off"), "{e}");
        for (key, value) in [
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT", "-1"),
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", "ten"),
            ("LOGIN_MAX_FAILURES_PER_ADDRESS", "many"),
            ("LOGIN_FAILURE_WINDOW", "0"),
            ("TRUSTED_PROXIES", "10.0.0.0/8, proxy.local"),
        ] {
            let e = from(&[(key, value)]).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(value), "{e}");
        }
    }

    #[test]
    fn password_min_length_is_read_and_bounded() {
        assert_eq!(from(&[]).unwrap().auth.password_min_length, 8);
        let c = from(&[("PASSWORD_MIN_LENGTH", "12"), ("BCRYPT_COST", "5")]).unwrap();
        assert_eq!(c.auth.password_min_length, 12);
        assert_eq!(c.auth.bcrypt_cost, 5);
        assert!(format!("{c:?}").contains("password_min_length: 12"));
        for bad in ["0", "65", "-1", "eight"] {
            let e = from(&[("PASSWORD_MIN_LENGTH", bad)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("PASSWORD_MIN_LENGTH") && e.contains("1 to 64"),
                "{e}"
            );
        }
        let in_code = Config::default().with(|c| c.auth.password_min_length = 0);
        assert!(in_code.validate().is_err());
    }

    #[test]
    fn short_secrets_stop_startup() {
        let e = from(&[("JWT_SECRET_KEY", "short")]).unwrap_err();
        assert!(matches!(
            e,
            ConfigError::SecretTooShort {
                key: "JWT_SECRET_KEY",
                len: 5
            }
        ));
        assert!(e.to_string().contains("at least 32 bytes"));
        let e = from(&[("SECRET_KEY", "tiny")]).unwrap_err();
        assert!(e.to_string().contains("SECRET_KEY"));
    }

    #[test]
    fn unsupported_openapi_version_lists_supported_ones() {
        let e = from(&[("OPENAPI_VERSION", "3.1.0")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3.1.0") && e.contains("3.0.3"), "{e}");
    }

    /// Every key the library reads, section by section, in the table's order.
    fn keys() -> Vec<&'static str> {
        [
            HttpSettings::KEYS,
            DbSettings::KEYS,
            AuthSettings::KEYS,
            ListSettings::KEYS,
            OpsSettings::KEYS,
        ]
        .concat()
    }

    fn shown_defaults() -> HashMap<&'static str, String> {
        [
            HttpSettings::shown_defaults(),
            DbSettings::shown_defaults(),
            AuthSettings::shown_defaults(),
            ListSettings::shown_defaults(),
            OpsSettings::shown_defaults(),
        ]
        .concat()
        .into_iter()
        .collect()
    }

    /// The rows of the keys table of [configuration.md](https://github.com/crudforge/crudforge/blob/main/docs/configuration.md): key, Default column, Meaning.
    fn documented_rows() -> Vec<(String, String, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
        let text = std::fs::read_to_string(path).unwrap();
        let table = text
            .split("\n## Keys\n")
            .nth(1)
            .expect("docs/configuration.md has a ## Keys section");
        table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|row| {
                let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
                assert_eq!(cells.len(), 4, "a row of four cells: {row}");
                let key = cells[0].trim().trim_matches('`').to_owned();
                (key, cells[2].trim().to_owned(), cells[3].trim().to_owned())
            })
            .collect()
    }

    /// The literal a Default cell starts with: its first `backticked` text, or its first word
    /// (`unset`, `empty`).
    fn documented_default(cell: &str) -> String {
        match cell.strip_prefix('`') {
            Some(rest) => rest.split('`').next().unwrap_or_default().to_owned(),
            None => cell
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    #[test]
    fn the_documentation_lists_exactly_the_declared_keys_with_their_defaults() {
        // Defaults the documentation writes differently from `Shown` (none today): key, the
        // documented literal.
        const EXCEPTIONS: &[(&str, &str)] = &[];
        let declared = keys();
        let defaults = shown_defaults();
        let rows = documented_rows();
        let mut documented = Vec::new();
        for (key, default, meaning) in &rows {
            if meaning.starts_with("Reference application only.") {
                assert!(
                    !declared.contains(&key.as_str()),
                    "{key} is the library's, not the reference application's"
                );
                continue;
            }
            documented.push(key.as_str());
            let Some(shown) = defaults.get(key.as_str()) else {
                panic!("docs/configuration.md documents {key}, which the library does not read (config/settings.rs)");
            };
            let written = documented_default(default);
            if EXCEPTIONS.contains(&(key.as_str(), written.as_str())) {
                continue;
            }
            assert_eq!(
                &written, shown,
                "the documented default of {key} differs from the declared one"
            );
        }
        for key in &declared {
            assert!(
                documented.contains(key),
                "{key} is declared in config/settings.rs but has no row in docs/configuration.md"
            );
        }
        let mut unique = documented.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), documented.len(), "a key is documented twice");
        assert_eq!(
            declared.len(),
            108,
            "the count of keys changed: update this test"
        );
    }

    #[test]
    fn every_key_is_declared_once() {
        let mut all = keys();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn debug_hides_secrets_and_the_password_of_the_database_uri() {
        let c = Config::default().with(|c| {
            c.db.database_uri = Some("postgres://app:hunter2-pw@db/app".to_owned());
            c.auth.jwt_secret_key = Some(Secret::new("k".repeat(40)));
            c.auth.secret_key = Some(Secret::new("s".repeat(33)));
            c.ops.metrics_token = Some(Secret::new("scrape-token"));
        });
        let dbg = format!("{c:?}");
        assert!(
            dbg.contains(r#"database_uri: Some("postgres://app:***@db/app")"#),
            "{dbg}"
        );
        assert!(
            dbg.contains("jwt_secret_key: Some(Secret(<40 bytes>))"),
            "{dbg}"
        );
        assert!(
            dbg.contains("secret_key: Some(Secret(<33 bytes>))"),
            "{dbg}"
        );
        assert!(
            dbg.contains("metrics_token: Some(Secret(<12 bytes>))"),
            "{dbg}"
        );
        for leaked in ["hunter2", "kkkk", "ssss", "scrape-token"] {
            assert!(!dbg.contains(leaked), "{leaked} leaked in {dbg}");
        }
        assert!(dbg.contains("max_page_size: 100"), "{dbg}");
    }

    crate::settings! {
        /// Settings as an application declares them.
        #[derive(Clone, PartialEq)]
        struct AppSettings {
            /// A flag.
            APP_FLAG => flag: bool = false, value::boolean, plain;
            /// A secret.
            APP_TOKEN => token: Option<Secret> = None, value::secret, secret;
        }
    }

    #[test]
    fn applications_read_their_settings_with_the_same_grammar() {
        for (given, expected) in [("yes", true), ("ON", true), ("0", false), (" ", false)] {
            let app = AppSettings::from_lookup(|k| (k == "APP_FLAG").then(|| given.to_owned()));
            let config = from(&[("DEBUG", given)]).unwrap();
            assert_eq!((app.unwrap().flag, config.http.debug), (expected, expected));
        }
        let app = AppSettings::from_lookup(|k| (k == "APP_FLAG").then(|| "maybe".to_owned()));
        let config = from(&[("DEBUG", "maybe")]);
        assert_eq!(
            app.unwrap_err().to_string().replace("APP_FLAG", "DEBUG"),
            config.unwrap_err().to_string()
        );
        let app =
            AppSettings::from_lookup(|k| (k == "APP_TOKEN").then(|| "abc".to_owned())).unwrap();
        assert_eq!(
            format!("{app:?}"),
            "AppSettings { flag: false, token: Some(Secret(<3 bytes>)) }"
        );
        assert_eq!(AppSettings::KEYS, ["APP_FLAG", "APP_TOKEN"]);
    }
}
