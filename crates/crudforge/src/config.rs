//! Service configuration: the contract's keys, read from the environment or built in code.

use crate::auth::yielding_bcrypt;
use crate::db::locking::SqliteLocking;
use crate::net::IpNet;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// OpenAPI versions the description generator can produce.
pub const SUPPORTED_OPENAPI_VERSIONS: &[&str] = &["3.0.3"];

/// Smallest accepted length of a signing secret, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// Name of the file, inside the data directory, that keeps a generated signing key.
pub const GENERATED_KEY_FILE: &str = "jwt_secret.key";

/// Everything the service reads from its environment.
///
/// Build it with [`Config::from_env`], with [`Config::from_lookup`] (any key/value source), or
/// in code starting from [`Config::default`] and setting fields. Defaults are documented in
/// `docs/configuration.md`.
#[derive(Clone)]
pub struct Config {
    /// `API_TITLE`: title of the OpenAPI description.
    pub api_title: String,
    /// `API_VERSION`: version label of the API description, also reported by the health check.
    pub api_version: String,
    /// `OPENAPI_VERSION`: OpenAPI specification version of the description.
    pub openapi_version: String,
    /// `ORM_DATABASE_URI`: `sqlite://<path>` or `postgres://...`; `None` means a SQLite file
    /// in the data directory.
    pub database_uri: Option<String>,
    /// `CRUDFORGE_DATA_DIR`: where the default SQLite file and a generated key live.
    pub data_dir: PathBuf,
    /// `SECRET_KEY`: application secret; signs tokens when `JWT_SECRET_KEY` is unset.
    pub secret_key: Option<Secret>,
    /// `JWT_SECRET_KEY`: secret used to sign JWTs.
    pub jwt_secret_key: Option<Secret>,
    /// `JWT_ACCESS_TOKEN_EXPIRES`: access token lifetime in seconds.
    pub jwt_access_token_expires: u64,
    /// `JWT_REFRESH_TOKEN_EXPIRES`: refresh token lifetime in seconds.
    pub jwt_refresh_token_expires: u64,
    /// `IDEMPOTENCY_KEY_TTL`: seconds an `Idempotency-Key` and its stored answer are kept.
    pub idempotency_key_ttl: u64,
    /// `HEALTH_ENDPOINT_ENABLED`: whether the health route exists.
    pub health_endpoint_enabled: bool,
    /// `HEALTH_ENDPOINT_PATH`: path of the health route.
    pub health_endpoint_path: String,
    /// `ORM_PERFORMANCE_MONITORING`: time every query, log slow ones, report per request.
    pub orm_performance_monitoring: bool,
    /// `ORM_SLOW_QUERY_THRESHOLD`: seconds above which a query is logged as slow.
    pub orm_slow_query_threshold: f64,
    /// `DEBUG`: debug members in error bodies, debug-only reference endpoints.
    pub debug: bool,
    /// `DEFAULT_PAGE_SIZE`: items per page when a list request names none.
    pub default_page_size: u32,
    /// `MAX_PAGE_SIZE`: largest `page_size` a list request may ask for.
    pub max_page_size: u32,
    /// `MAX_BODY_SIZE`: largest accepted request body, in bytes.
    pub max_body_size: usize,
    /// `FILTER_MAX_LENGTH`: longest accepted `filter` expression of a list request, in
    /// characters.
    pub filter_max_length: u32,
    /// `FILTER_MAX_DEPTH`: deepest nesting (parentheses and `not`) of a `filter` expression.
    pub filter_max_depth: u32,
    /// `BCRYPT_COST`: bcrypt work factor for new password hashes (4 to 31).
    pub bcrypt_cost: u32,
    /// `PASSWORD_MIN_LENGTH`: the shortest new password accepted, in characters (1 to 64).
    pub password_min_length: usize,
    /// `SQLITE_SYNCHRONOUS`: how hard SQLite waits for the disk on each commit.
    pub sqlite_synchronous: SqliteSynchronous,
    /// `SQLITE_LOCKING`: whether other processes may open the SQLite file while this one
    /// has it open.
    pub sqlite_locking: SqliteLocking,
    /// `LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS`: failed credential checks one client
    /// address may make on one account per window before its further attempts there get 429
    /// (0 turns this counter off).
    pub login_max_failures_per_account_and_address: u32,
    /// `LOGIN_MAX_FAILURES_PER_ACCOUNT`: failed credential checks one account may see per
    /// window from all addresses together before every attempt on it gets 429, the owner's
    /// too: a ceiling well above the per-address one (0 turns the account counter off).
    pub login_max_failures_per_account: u32,
    /// `LOGIN_MAX_FAILURES_PER_ADDRESS`: failed credential checks one client address may make
    /// per window before further attempts get 429 (0 turns the address counter off).
    pub login_max_failures_per_address: u32,
    /// `LOGIN_FAILURE_WINDOW`: length in seconds of the window the failures are counted in.
    pub login_failure_window: u64,
    /// `TRUSTED_PROXIES`: proxies (addresses or CIDR blocks) whose `X-Forwarded-For` is
    /// believed when finding a client's address; empty means the socket's peer is the client.
    pub trusted_proxies: Vec<IpNet>,
    /// `METRICS_ENABLED`: whether the Prometheus metrics route exists.
    pub metrics_enabled: bool,
    /// `METRICS_PATH`: path of the Prometheus metrics route.
    pub metrics_path: String,
    /// `METRICS_TOKEN`: when set, the metrics route wants `Authorization: Bearer <token>`.
    pub metrics_token: Option<Secret>,
    /// `CORS_ALLOWED_ORIGINS`: origins (`https://app.example.com`) a browser may call the API
    /// from; empty means no CORS headers at all, `*` means any origin (without credentials).
    pub cors_allowed_origins: Vec<String>,
    /// `LOG_FORMAT`: `text` (human-readable) or `json` (one object per line).
    pub log_format: LogFormat,
    /// `READINESS_PATH`: path of the readiness route (503 until ready and from shutdown on).
    pub readiness_path: String,
    /// `SHUTDOWN_TIMEOUT`: seconds a graceful shutdown waits for requests in flight.
    pub shutdown_timeout: u64,
    /// `DB_CHECKOUT_TIMEOUT`: seconds a request waits for a pooled connection (or for a new
    /// one to connect) before it gets 503.
    pub db_checkout_timeout: u64,
    /// `DB_STATEMENT_TIMEOUT`: seconds one PostgreSQL statement may run before the server
    /// cancels it (`statement_timeout`).
    pub db_statement_timeout: u64,
    /// `REQUEST_TIMEOUT`: seconds one request may take, its body included; past it the
    /// handler is abandoned (its transaction rolled back) and the client gets 408.
    pub request_timeout: u64,
    /// `MAX_FILTERS`: most filters one list request may carry (400 above).
    pub max_filters: u32,
    /// `MAX_IN_VALUES`: most values one `__in` filter may carry (400 above).
    pub max_in_values: u32,
}

/// How log lines are written (`LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
/// keeps those commits, at a cost in write speed (see `docs/database.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
    pub fn as_sql(self) -> &'static str {
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

impl Default for Config {
    fn default() -> Self {
        Config {
            api_title: "crudforge API".to_owned(),
            api_version: "1.0.0".to_owned(),
            openapi_version: "3.0.3".to_owned(),
            database_uri: None,
            data_dir: PathBuf::from("data"),
            secret_key: None,
            jwt_secret_key: None,
            jwt_access_token_expires: 900,
            jwt_refresh_token_expires: 2_592_000,
            idempotency_key_ttl: 86_400,
            health_endpoint_enabled: true,
            health_endpoint_path: "/health".to_owned(),
            orm_performance_monitoring: false,
            orm_slow_query_threshold: 0.5,
            debug: false,
            default_page_size: 25,
            max_page_size: 100,
            max_body_size: 1024 * 1024,
            filter_max_length: 2000,
            filter_max_depth: 16,
            bcrypt_cost: 12,
            password_min_length: crate::auth::password::DEFAULT_MIN_PASSWORD_CHARS,
            sqlite_synchronous: SqliteSynchronous::Normal,
            sqlite_locking: SqliteLocking::Shared,
            login_max_failures_per_account_and_address: 10,
            login_max_failures_per_account: 100,
            login_max_failures_per_address: 50,
            login_failure_window: 900,
            trusted_proxies: Vec::new(),
            metrics_enabled: false,
            metrics_path: "/metrics".to_owned(),
            metrics_token: None,
            cors_allowed_origins: Vec::new(),
            log_format: LogFormat::Text,
            readiness_path: "/ready".to_owned(),
            shutdown_timeout: 30,
            db_checkout_timeout: 5,
            db_statement_timeout: 30,
            request_timeout: 30,
            max_filters: 20,
            max_in_values: 100,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("api_title", &self.api_title)
            .field("api_version", &self.api_version)
            .field("openapi_version", &self.openapi_version)
            .field(
                "database_uri",
                &self.database_uri.as_deref().map(redact_uri),
            )
            .field("data_dir", &self.data_dir)
            .field("secret_key", &self.secret_key)
            .field("jwt_secret_key", &self.jwt_secret_key)
            .field("jwt_access_token_expires", &self.jwt_access_token_expires)
            .field("jwt_refresh_token_expires", &self.jwt_refresh_token_expires)
            .field("idempotency_key_ttl", &self.idempotency_key_ttl)
            .field("health_endpoint_enabled", &self.health_endpoint_enabled)
            .field("health_endpoint_path", &self.health_endpoint_path)
            .field(
                "orm_performance_monitoring",
                &self.orm_performance_monitoring,
            )
            .field("orm_slow_query_threshold", &self.orm_slow_query_threshold)
            .field("debug", &self.debug)
            .field("default_page_size", &self.default_page_size)
            .field("max_page_size", &self.max_page_size)
            .field("max_body_size", &self.max_body_size)
            .field("filter_max_length", &self.filter_max_length)
            .field("filter_max_depth", &self.filter_max_depth)
            .field("bcrypt_cost", &self.bcrypt_cost)
            .field("password_min_length", &self.password_min_length)
            .field("sqlite_synchronous", &self.sqlite_synchronous)
            .field("sqlite_locking", &self.sqlite_locking)
            .field(
                "login_max_failures_per_account_and_address",
                &self.login_max_failures_per_account_and_address,
            )
            .field(
                "login_max_failures_per_account",
                &self.login_max_failures_per_account,
            )
            .field(
                "login_max_failures_per_address",
                &self.login_max_failures_per_address,
            )
            .field("login_failure_window", &self.login_failure_window)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("metrics_enabled", &self.metrics_enabled)
            .field("metrics_path", &self.metrics_path)
            .field("metrics_token", &self.metrics_token)
            .field("cors_allowed_origins", &self.cors_allowed_origins)
            .field("log_format", &self.log_format)
            .field("readiness_path", &self.readiness_path)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("db_checkout_timeout", &self.db_checkout_timeout)
            .field("db_statement_timeout", &self.db_statement_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_filters", &self.max_filters)
            .field("max_in_values", &self.max_in_values)
            .finish()
    }
}

/// Hides the password of a connection string.
fn redact_uri(uri: &str) -> String {
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
    /// A secret is shorter than [`MIN_SECRET_LEN`].
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
        let get = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let mut cfg = Config::default();
        if let Some(v) = get("API_TITLE") {
            cfg.api_title = v;
        }
        if let Some(v) = get("API_VERSION") {
            cfg.api_version = v;
        }
        if let Some(v) = get("OPENAPI_VERSION") {
            cfg.openapi_version = v.trim().to_owned();
        }
        cfg.database_uri = get("ORM_DATABASE_URI");
        if let Some(v) = get("CRUDFORGE_DATA_DIR") {
            cfg.data_dir = PathBuf::from(v);
        }
        cfg.secret_key = get("SECRET_KEY").map(Secret::new);
        cfg.jwt_secret_key = get("JWT_SECRET_KEY").map(Secret::new);
        if let Some(v) = get("JWT_ACCESS_TOKEN_EXPIRES") {
            cfg.jwt_access_token_expires = parse_seconds("JWT_ACCESS_TOKEN_EXPIRES", &v)?;
        }
        if let Some(v) = get("JWT_REFRESH_TOKEN_EXPIRES") {
            cfg.jwt_refresh_token_expires = parse_seconds("JWT_REFRESH_TOKEN_EXPIRES", &v)?;
        }
        if let Some(v) = get("IDEMPOTENCY_KEY_TTL") {
            cfg.idempotency_key_ttl = parse_seconds("IDEMPOTENCY_KEY_TTL", &v)?;
        }
        if let Some(v) = get("HEALTH_ENDPOINT_ENABLED") {
            cfg.health_endpoint_enabled = parse_bool("HEALTH_ENDPOINT_ENABLED", &v)?;
        }
        if let Some(v) = get("HEALTH_ENDPOINT_PATH") {
            cfg.health_endpoint_path = parse_path("HEALTH_ENDPOINT_PATH", &v)?;
        }
        if let Some(v) = get("ORM_PERFORMANCE_MONITORING") {
            cfg.orm_performance_monitoring = parse_bool("ORM_PERFORMANCE_MONITORING", &v)?;
        }
        if let Some(v) = get("ORM_SLOW_QUERY_THRESHOLD") {
            cfg.orm_slow_query_threshold = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| {
                    invalid(
                        "ORM_SLOW_QUERY_THRESHOLD",
                        "a non-negative number of seconds such as 0.5",
                        &v,
                    )
                })?;
        }
        if let Some(v) = get("DEBUG") {
            cfg.debug = parse_bool("DEBUG", &v)?;
        }
        if let Some(v) = get("DEFAULT_PAGE_SIZE") {
            cfg.default_page_size = parse_positive("DEFAULT_PAGE_SIZE", &v)?;
        }
        if let Some(v) = get("MAX_PAGE_SIZE") {
            cfg.max_page_size = parse_positive("MAX_PAGE_SIZE", &v)?;
        }
        if let Some(v) = get("FILTER_MAX_LENGTH") {
            cfg.filter_max_length = parse_positive("FILTER_MAX_LENGTH", &v)?;
        }
        if let Some(v) = get("FILTER_MAX_DEPTH") {
            cfg.filter_max_depth = parse_positive("FILTER_MAX_DEPTH", &v)?;
        }
        if let Some(v) = get("MAX_BODY_SIZE") {
            cfg.max_body_size = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| invalid("MAX_BODY_SIZE", "a positive number of bytes", &v))?;
        }
        if let Some(v) = get("BCRYPT_COST") {
            cfg.bcrypt_cost = v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (yielding_bcrypt::MIN_COST..=yielding_bcrypt::MAX_COST).contains(n))
                .ok_or_else(|| invalid("BCRYPT_COST", "a whole number from 4 to 31", &v))?;
        }
        if let Some(v) = get("PASSWORD_MIN_LENGTH") {
            cfg.password_min_length = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=crate::auth::password::MAX_MIN_PASSWORD_CHARS).contains(n))
                .ok_or_else(|| invalid("PASSWORD_MIN_LENGTH", "a whole number from 1 to 64", &v))?;
        }
        if let Some(v) = get("SQLITE_SYNCHRONOUS") {
            cfg.sqlite_synchronous = SqliteSynchronous::parse(&v).ok_or_else(|| {
                invalid("SQLITE_SYNCHRONOUS", "one of OFF, NORMAL, FULL, EXTRA", &v)
            })?;
        }
        if let Some(v) = get("SQLITE_LOCKING") {
            cfg.sqlite_locking = SqliteLocking::parse(&v)
                .ok_or_else(|| invalid("SQLITE_LOCKING", "SHARED or EXCLUSIVE", &v))?;
        }
        if let Some(v) = get("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS") {
            cfg.login_max_failures_per_account_and_address =
                parse_count("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", &v)?;
        }
        if let Some(v) = get("LOGIN_MAX_FAILURES_PER_ACCOUNT") {
            cfg.login_max_failures_per_account = parse_count("LOGIN_MAX_FAILURES_PER_ACCOUNT", &v)?;
        }
        if let Some(v) = get("LOGIN_MAX_FAILURES_PER_ADDRESS") {
            cfg.login_max_failures_per_address = parse_count("LOGIN_MAX_FAILURES_PER_ADDRESS", &v)?;
        }
        if let Some(v) = get("LOGIN_FAILURE_WINDOW") {
            cfg.login_failure_window = parse_seconds("LOGIN_FAILURE_WINDOW", &v)?;
        }
        if let Some(v) = get("TRUSTED_PROXIES") {
            cfg.trusted_proxies = crate::net::parse_list(&v).map_err(|_| {
                invalid(
                    "TRUSTED_PROXIES",
                    "a comma-separated list of IP addresses or CIDR blocks such as 10.0.0.0/8, ::1",
                    &v,
                )
            })?;
        }
        if let Some(v) = get("METRICS_ENABLED") {
            cfg.metrics_enabled = parse_bool("METRICS_ENABLED", &v)?;
        }
        if let Some(v) = get("METRICS_PATH") {
            cfg.metrics_path = parse_path("METRICS_PATH", &v)?;
        }
        cfg.metrics_token = get("METRICS_TOKEN").map(|v| Secret::new(v.trim().to_owned()));
        if let Some(v) = get("CORS_ALLOWED_ORIGINS") {
            cfg.cors_allowed_origins = parse_origins(&v)?;
        }
        if let Some(v) = get("LOG_FORMAT") {
            cfg.log_format = match v.trim().to_ascii_lowercase().as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err(invalid("LOG_FORMAT", "text or json", &v)),
            };
        }
        if let Some(v) = get("READINESS_PATH") {
            cfg.readiness_path = parse_path("READINESS_PATH", &v)?;
        }
        if let Some(v) = get("SHUTDOWN_TIMEOUT") {
            cfg.shutdown_timeout = v.trim().parse::<u64>().ok().ok_or_else(|| {
                invalid(
                    "SHUTDOWN_TIMEOUT",
                    "a whole number of seconds such as 30",
                    &v,
                )
            })?;
        }
        if let Some(v) = get("DB_CHECKOUT_TIMEOUT") {
            cfg.db_checkout_timeout = parse_seconds("DB_CHECKOUT_TIMEOUT", &v)?;
        }
        if let Some(v) = get("DB_STATEMENT_TIMEOUT") {
            cfg.db_statement_timeout = parse_seconds("DB_STATEMENT_TIMEOUT", &v)?;
        }
        if let Some(v) = get("REQUEST_TIMEOUT") {
            cfg.request_timeout = parse_seconds("REQUEST_TIMEOUT", &v)?;
        }
        if let Some(v) = get("MAX_FILTERS") {
            cfg.max_filters = parse_positive("MAX_FILTERS", &v)?;
        }
        if let Some(v) = get("MAX_IN_VALUES") {
            cfg.max_in_values = parse_positive("MAX_IN_VALUES", &v)?;
        }
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
            ("JWT_SECRET_KEY", &self.jwt_secret_key),
            ("SECRET_KEY", &self.secret_key),
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
        if !SUPPORTED_OPENAPI_VERSIONS.contains(&self.openapi_version.as_str()) {
            return Err(ConfigError::UnsupportedOpenApiVersion {
                value: self.openapi_version.clone(),
            });
        }
        if self.default_page_size > self.max_page_size {
            return Err(invalid(
                "DEFAULT_PAGE_SIZE",
                "a page size no larger than MAX_PAGE_SIZE",
                &self.default_page_size.to_string(),
            ));
        }
        if !(1..=crate::auth::password::MAX_MIN_PASSWORD_CHARS).contains(&self.password_min_length)
        {
            return Err(invalid(
                "PASSWORD_MIN_LENGTH",
                "a whole number from 1 to 64",
                &self.password_min_length.to_string(),
            ));
        }
        if !self.health_endpoint_path.starts_with('/') {
            return Err(invalid(
                "HEALTH_ENDPOINT_PATH",
                "a path starting with /",
                &self.health_endpoint_path,
            ));
        }
        for (key, path) in [
            ("METRICS_PATH", &self.metrics_path),
            ("READINESS_PATH", &self.readiness_path),
        ] {
            if !path.starts_with('/') {
                return Err(invalid(key, "a path starting with /", path));
            }
        }
        if self.readiness_path == self.health_endpoint_path
            || (self.metrics_enabled && self.metrics_path == self.readiness_path)
        {
            return Err(invalid(
                "READINESS_PATH",
                "a path other than HEALTH_ENDPOINT_PATH and METRICS_PATH",
                &self.readiness_path,
            ));
        }
        Ok(())
    }

    /// The password policy of new passwords: `BCRYPT_COST` and `PASSWORD_MIN_LENGTH`.
    pub fn password_policy(&self) -> crate::auth::PasswordPolicy {
        crate::auth::PasswordPolicy::new(self.bcrypt_cost).with_min_chars(self.password_min_length)
    }

    /// The key that signs tokens: `JWT_SECRET_KEY`, else `SECRET_KEY`, else a strong random
    /// key generated once and kept in `<data_dir>/jwt_secret.key` (readable by the owner only),
    /// so tokens survive restarts. There is no built-in default key.
    ///
    /// # Errors
    ///
    /// A too-short configured secret, or a key file that cannot be read or written.
    pub fn signing_key(&self) -> Result<Secret, ConfigError> {
        self.validate()?;
        if let Some(k) = self.jwt_secret_key.as_ref().or(self.secret_key.as_ref()) {
            return Ok(k.clone());
        }
        load_or_generate_key(&self.data_dir.join(GENERATED_KEY_FILE))
    }
}

fn load_or_generate_key(path: &Path) -> Result<Secret, ConfigError> {
    let key_err = |source| ConfigError::KeyFile {
        path: path.to_owned(),
        source,
    };
    match read_private(path) {
        Ok(text) => {
            let key = text.trim().as_bytes().to_vec();
            if key.len() < MIN_SECRET_LEN {
                return Err(key_err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("holds {} bytes; at least {MIN_SECRET_LEN} are needed (delete it to generate a new key)", key.len()),
                )));
            }
            Ok(Secret(key))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(key_err)?;
            }
            let mut raw = [0u8; 48];
            getrandom::fill(&mut raw).map_err(|e| key_err(std::io::Error::other(e.to_string())))?;
            let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            let mut options = fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            match options.open(path) {
                Ok(mut file) => {
                    file.write_all(hex.as_bytes()).map_err(key_err)?;
                    file.sync_all().map_err(key_err)?;
                    Ok(Secret(hex.into_bytes()))
                }
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    load_or_generate_key(path)
                }
                Err(e) => Err(key_err(e)),
            }
        }
        Err(e) => Err(key_err(e)),
    }
}

/// Reads a key file that only its owner may read or write: on Unix, a file whose mode gives
/// the group or others any access is refused, as OpenSSH refuses such private keys.
fn read_private(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = fs::File::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "mode {mode:04o} lets other users read or change the key; \
                     restrict it to its owner with `chmod 600 {}`",
                    path.display()
                ),
            ));
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

fn invalid(key: &'static str, expected: &'static str, value: &str) -> ConfigError {
    ConfigError::Invalid {
        key,
        expected,
        value: value.to_owned(),
    }
}

fn parse_bool(key: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(key, "a boolean: true or false", v)),
    }
}

fn parse_seconds(key: &'static str, v: &str) -> Result<u64, ConfigError> {
    v.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, "a positive whole number of seconds such as 3600", v))
}

fn parse_positive(key: &'static str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(key, "a positive whole number", v))
}

fn parse_count(key: &'static str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .ok_or_else(|| invalid(key, "a whole number (0 turns the limit off)", v))
}

/// `*`, or a comma-separated list of origins (`scheme://host[:port]`, no path).
fn parse_origins(v: &str) -> Result<Vec<String>, ConfigError> {
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
            "CORS_ALLOWED_ORIGINS",
            "* or a comma-separated list of origins such as https://app.example.com",
            v,
        ))
    }
}

fn parse_path(key: &'static str, v: &str) -> Result<String, ConfigError> {
    let v = v.trim();
    if v.starts_with('/') && !v.contains(char::is_whitespace) {
        Ok(v.to_owned())
    } else {
        Err(invalid(key, "a path starting with / such as /health", v))
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
        assert_eq!(c.default_page_size, 25);
        assert_eq!(c.max_page_size, 100);
        assert_eq!(c.health_endpoint_path, "/health");
        assert!(c.health_endpoint_enabled);
        assert!(!c.debug);
        assert!(c.jwt_secret_key.is_none());
        assert_eq!(c.login_max_failures_per_account_and_address, 10);
        assert_eq!(c.login_max_failures_per_account, 100);
        assert_eq!(c.login_max_failures_per_address, 50);
        assert_eq!(c.login_failure_window, 900);
        assert!(c.trusted_proxies.is_empty());
        assert!(!c.metrics_enabled);
        assert_eq!(c.metrics_path, "/metrics");
        assert!(c.metrics_token.is_none());
        assert!(c.cors_allowed_origins.is_empty());
        assert_eq!(c.log_format, LogFormat::Text);
        assert_eq!(c.readiness_path, "/ready");
        assert_eq!(c.shutdown_timeout, 30);
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
        assert!(c.metrics_enabled);
        assert_eq!(c.metrics_path, "/internal/metrics");
        assert_eq!(c.metrics_token.unwrap().expose(), b"scrape-me");
        assert_eq!(
            c.cors_allowed_origins,
            ["https://app.example.com", "http://localhost:3000"]
        );
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.readiness_path, "/readyz");
        assert_eq!(c.shutdown_timeout, 5);
        assert_eq!(
            from(&[("CORS_ALLOWED_ORIGINS", "*")])
                .unwrap()
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
            ("IDEMPOTENCY_KEY_TTL", "600"),
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", "3"),
            ("LOGIN_MAX_FAILURES_PER_ACCOUNT", "5"),
            ("LOGIN_MAX_FAILURES_PER_ADDRESS", "0"),
            ("LOGIN_FAILURE_WINDOW", "60"),
            ("TRUSTED_PROXIES", "10.0.0.0/8, ::1"),
        ])
        .unwrap();
        assert_eq!(c.idempotency_key_ttl, 600);
        assert_eq!(c.api_title, "Zoo");
        assert_eq!(c.api_version, "2.1");
        assert_eq!(c.database_uri.as_deref(), Some("postgres://u:pw@h/db"));
        assert_eq!(c.secret_key.as_ref().unwrap().expose().len(), 32);
        assert_eq!(c.jwt_secret_key.as_ref().unwrap().expose().len(), 40);
        assert_eq!(c.jwt_access_token_expires, 60);
        assert_eq!(c.jwt_refresh_token_expires, 120);
        assert!(!c.health_endpoint_enabled);
        assert_eq!(c.health_endpoint_path, "/status");
        assert!(c.orm_performance_monitoring);
        assert!((c.orm_slow_query_threshold - 0.25).abs() < f64::EPSILON);
        assert!(c.debug);
        assert_eq!(c.default_page_size, 10);
        assert_eq!(c.max_page_size, 50);
        assert_eq!(c.max_body_size, 2048);
        assert_eq!(c.bcrypt_cost, 4);
        assert_eq!(c.sqlite_synchronous, SqliteSynchronous::Full);
        assert_eq!(c.sqlite_locking, SqliteLocking::Exclusive);
        assert_eq!(c.login_max_failures_per_account_and_address, 3);
        assert_eq!(c.login_max_failures_per_account, 5);
        assert_eq!(c.login_max_failures_per_address, 0);
        assert_eq!(c.login_failure_window, 60);
        assert_eq!(c.trusted_proxies.len(), 2);
        assert_eq!(
            from(&[]).unwrap().sqlite_synchronous,
            SqliteSynchronous::Normal
        );
        assert_eq!(from(&[]).unwrap().sqlite_locking, SqliteLocking::Shared);
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
        assert_eq!(from(&[]).unwrap().password_min_length, 8);
        let c = from(&[("PASSWORD_MIN_LENGTH", "12"), ("BCRYPT_COST", "5")]).unwrap();
        assert_eq!(c.password_min_length, 12);
        let policy = c.password_policy();
        assert_eq!((policy.cost, policy.min_chars), (5, 12));
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
        let in_code = Config {
            password_min_length: 0,
            ..Config::default()
        };
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

    #[test]
    fn generated_key_is_strong_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            data_dir: dir.path().join("nested"),
            ..Config::default()
        };
        let first = cfg.signing_key().unwrap();
        assert!(first.expose().len() >= 64);
        let second = cfg.signing_key().unwrap();
        assert_eq!(first, second, "the key must survive restarts");
        let path = dir.path().join("nested").join(GENERATED_KEY_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let other = Config {
            data_dir: tempfile::tempdir().unwrap().path().to_owned(),
            ..Config::default()
        };
        assert_ne!(other.signing_key().unwrap(), first, "keys must be random");
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_may_read_stops_startup() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            data_dir: dir.path().to_owned(),
            ..Config::default()
        };
        let key = cfg.signing_key().unwrap();
        let path = dir.path().join(GENERATED_KEY_FILE);
        for mode in [0o640, 0o604, 0o620, 0o644] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let e = cfg.signing_key().unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(&e, ConfigError::KeyFile { path: p, .. } if *p == path),
                "{text}"
            );
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains(&format!("{mode:04o}")), "{text}");
            assert!(text.contains("chmod 600"), "{text}");
        }
        // Restricted again (or 0400), the same key is used.
        for mode in [0o600, 0o400] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(cfg.signing_key().unwrap(), key);
        }
    }

    #[test]
    fn configured_key_wins_over_generated_one() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            data_dir: dir.path().to_owned(),
            secret_key: Some(Secret::new(vec![b'a'; 32])),
            ..Config::default()
        };
        assert_eq!(cfg.signing_key().unwrap().expose(), &[b'a'; 32]);
        assert!(!dir.path().join(GENERATED_KEY_FILE).exists());
        let cfg = Config {
            jwt_secret_key: Some(Secret::new(vec![b'b'; 33])),
            ..cfg
        };
        assert_eq!(cfg.signing_key().unwrap().expose(), &[b'b'; 33]);
    }
}
