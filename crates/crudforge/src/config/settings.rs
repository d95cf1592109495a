//! THE table of the library's settings: every key once, in its section, with its field, type,
//! default, reader and whether `Debug` hides it. [`settings!`](crate::settings) makes the
//! section structs, their defaults, their reading and their `Debug` from it, and a test checks
//! it against [configuration.md](https://github.com/crudforge/crudforge/blob/main/docs/configuration.md). To add a setting, add one line here and one row there.

use super::{
    LogFormat, SchemaCheck, Secret, SqliteLocking, SqliteSynchronous, DEFAULT_MIN_PASSWORD_CHARS,
};
use crate::net::IpNet;
use std::path::PathBuf;

crate::settings! {
    /// HTTP: the API description, request bodies and time, proxies, CORS, retries, `DEBUG`.
    #[derive(Clone)]
    #[non_exhaustive]
    pub struct HttpSettings {
        /// Title of the OpenAPI description.
        API_TITLE => api_title: String = "crudforge API".to_owned(), text, plain;
        /// Version label of the API description, also reported by the health check.
        API_VERSION => api_version: String = "1.0.0".to_owned(), text, plain;
        /// OpenAPI specification version of the description.
        OPENAPI_VERSION => openapi_version: String = "3.0.3".to_owned(), trimmed, plain;
        /// Largest accepted request body, in bytes.
        MAX_BODY_SIZE => max_body_size: usize = 1024 * 1024, body_size, plain;
        /// Seconds one request may take, its body included; past it the handler is
        /// abandoned (its transaction rolled back) and the client gets 408.
        REQUEST_TIMEOUT => request_timeout: u64 = 30, seconds, plain;
        /// Most items one batch write (`POST <prefix>batch/`, ...) may carry (422 above).
        BATCH_MAX_ITEMS => batch_max_items: u32 = 1000, positive, plain;
        /// Largest body of an import (`POST <prefix>import/`, feature `export`), in bytes
        /// (413 above, checked as it arrives).
        IMPORT_MAX_BYTES => import_max_bytes: usize = 64 * 1024 * 1024, body_size, plain;
        /// Most rows one import may carry (413 above).
        IMPORT_MAX_ROWS => import_max_rows: u32 = 100_000, positive, plain;
        /// Imports this process runs at once (503 with `Retry-After` above, before the body
        /// is read).
        IMPORT_MAX_CONCURRENT => import_max_concurrent: u32 = 4, positive, plain;
        /// Imports one user (or all anonymous callers together) runs at once (429 with
        /// `Retry-After` above, before the body is read).
        IMPORT_MAX_CONCURRENT_PER_USER => import_max_concurrent_per_user: u32 = 2, positive, plain;
        /// Rows an export (`GET <prefix>export/`) reads per query, each in its own snapshot.
        EXPORT_CHUNK_ROWS => export_chunk_rows: u32 = 2000, positive, plain;
        /// Seconds an `Idempotency-Key` and its stored answer are kept.
        IDEMPOTENCY_KEY_TTL => idempotency_key_ttl: u64 = 86_400, seconds, plain;
        /// Proxies (addresses or CIDR blocks) whose `X-Forwarded-For` is believed when
        /// finding a client's address; empty means the socket's peer is the client.
        TRUSTED_PROXIES => trusted_proxies: Vec<IpNet> = Vec::new(), networks, plain;
        /// Origins (`https://app.example.com`) a browser may call the API from; empty means
        /// no CORS headers at all, `*` means any origin (without credentials).
        CORS_ALLOWED_ORIGINS => cors_allowed_origins: Vec<String> = Vec::new(), origins, plain;
        /// Debug members in error bodies, debug-only reference endpoints.
        DEBUG => debug: bool = false, boolean, plain;
    }
}

crate::settings! {
    /// The database: where it is, SQLite's settings, timeouts, query monitoring.
    #[derive(Clone)]
    #[non_exhaustive]
    pub struct DbSettings {
        /// `sqlite://<path>` or `postgres://...`; `None` means a SQLite file in the data
        /// directory.
        ORM_DATABASE_URI => database_uri: Option<String> = None, some_text, uri_password;
        /// Where the default SQLite file and a generated key live.
        CRUDFORGE_DATA_DIR => data_dir: PathBuf = PathBuf::from("data"), file_path, plain;
        /// How hard SQLite waits for the disk on each commit.
        SQLITE_SYNCHRONOUS => sqlite_synchronous: SqliteSynchronous = SqliteSynchronous::Normal, sqlite_synchronous, plain;
        /// Whether other processes may open the SQLite file while this one has it open.
        SQLITE_LOCKING => sqlite_locking: SqliteLocking = SqliteLocking::Shared, sqlite_locking, plain;
        /// Seconds a request waits for a pooled connection (or for a new one to connect)
        /// before it gets 503.
        DB_CHECKOUT_TIMEOUT => db_checkout_timeout: u64 = 5, seconds, plain;
        /// Seconds one statement may run before it is stopped (PostgreSQL's
        /// `statement_timeout`, an interrupt on SQLite).
        DB_STATEMENT_TIMEOUT => db_statement_timeout: u64 = 30, seconds, plain;
        /// Time every query, log slow ones, report per request.
        ORM_PERFORMANCE_MONITORING => orm_performance_monitoring: bool = false, boolean, plain;
        /// Seconds above which a query is logged as slow.
        ORM_SLOW_QUERY_THRESHOLD => orm_slow_query_threshold: f64 = 0.5, slow_query_threshold, plain;
        /// What a starting server does when the database differs from the mounted resources:
        /// `warn` (log each difference), `strict` (refuse to start) or `off`.
        SCHEMA_CHECK => schema_check: SchemaCheck = SchemaCheck::Warn, schema_check, plain;
        /// Seconds a soft-deleted row is kept before the server removes it for good (0: kept
        /// for ever).
        SOFT_DELETE_RETENTION => soft_delete_retention: u32 = 0, count, plain;
    }
}

crate::settings! {
    /// Authentication: signing secrets, token lifetimes, password hashing and length, login
    /// and sign-up throttling.
    #[derive(Clone)]
    #[non_exhaustive]
    pub struct AuthSettings {
        /// Application secret; signs tokens when `JWT_SECRET_KEY` is unset.
        SECRET_KEY => secret_key: Option<Secret> = None, secret, secret;
        /// Secret used to sign JWTs.
        JWT_SECRET_KEY => jwt_secret_key: Option<Secret> = None, secret, secret;
        /// Access token lifetime in seconds.
        JWT_ACCESS_TOKEN_EXPIRES => jwt_access_token_expires: u64 = 900, seconds, plain;
        /// Refresh token lifetime in seconds.
        JWT_REFRESH_TOKEN_EXPIRES => jwt_refresh_token_expires: u64 = 2_592_000, seconds, plain;
        /// bcrypt work factor for new password hashes (4 to 31).
        BCRYPT_COST => bcrypt_cost: u32 = 12, bcrypt_cost, plain;
        /// The shortest new password accepted, in characters (1 to 64).
        PASSWORD_MIN_LENGTH => password_min_length: usize = DEFAULT_MIN_PASSWORD_CHARS, password_length, plain;
        /// Failed credential checks one client address may make on one account per window
        /// before its further attempts there get 429 (0 turns this counter off).
        LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS => login_max_failures_per_account_and_address: u32 = 10, count, plain;
        /// Failed credential checks one account may see per window from all addresses
        /// together before every attempt on it gets 429, the owner's too: a ceiling well above
        /// the per-address one (0 turns the account counter off).
        LOGIN_MAX_FAILURES_PER_ACCOUNT => login_max_failures_per_account: u32 = 100, count, plain;
        /// Failed credential checks one client address may make per window before further
        /// attempts get 429 (0 turns the address counter off).
        LOGIN_MAX_FAILURES_PER_ADDRESS => login_max_failures_per_address: u32 = 50, count, plain;
        /// Length in seconds of the window the failures are counted in.
        LOGIN_FAILURE_WINDOW => login_failure_window: u64 = 900, seconds, plain;
        /// Sign-ups (`POST` on a user blueprint with sign-up, by callers who are not
        /// administrators) one client address may make per window before its further ones
        /// get 429 (0 turns this counter off).
        SIGN_UP_MAX_PER_ADDRESS => sign_up_max_per_address: u32 = 20, count, plain;
        /// Length in seconds of the window the sign-ups are counted in.
        SIGN_UP_WINDOW => sign_up_window: u64 = 3600, seconds, plain;
        /// Sign-in providers (`providers` feature): their names, comma-separated (`google`,
        /// `github`, or a name of your own for any OpenID provider); each reads its own
        /// `AUTH_PROVIDER_<NAME>_*` keys ([`ProviderSettings`](crate::config::ProviderSettings)).
        AUTH_PROVIDERS => auth_providers: Vec<String> = Vec::new(), names, plain;
        /// Sign-in providers: the origins (`https://app.example.com`) whose pages a provider
        /// may send the browser back to (`return_to`); any other is refused.
        AUTH_RETURN_ORIGINS => auth_return_origins: Vec<String> = Vec::new(), origins, plain;
        /// Sign-in providers: seconds a sign-in started at a provider may take to come back.
        AUTH_PROVIDER_TICKET_SECONDS => auth_provider_ticket_seconds: u64 = 600, seconds, plain;
        /// Second factors (`factors` feature): the roles (`ADMIN`) whose holders must have a
        /// second factor, comma-separated; `*` for every account.
        AUTH_FACTOR_ROLES => auth_factor_roles: Vec<String> = Vec::new(), role_names, plain;
        /// Second factors: the domains, by name, whose members (holders of a role in them)
        /// must have a second factor, comma-separated.
        AUTH_FACTOR_DOMAINS => auth_factor_domains: Vec<String> = Vec::new(), role_names, plain;
        /// Second factors: seconds an account that must have a second factor may still sign
        /// in without one, from its first sign-in once the requirement applies to it (0: none).
        AUTH_FACTOR_GRACE_SECONDS => auth_factor_grace_seconds: u64 = 604_800, whole_seconds, plain;
        /// Second factors: the name an authenticator app shows beside the account (default:
        /// `API_TITLE`).
        AUTH_FACTOR_ISSUER => auth_factor_issuer: Option<String> = None, some_text, plain;
        /// Passkeys (`passkeys` feature): the origins (`https://app.example.com`) of the pages
        /// that register and use passkeys, comma-separated; unset, passkeys are off.
        AUTH_PASSKEY_ORIGINS => auth_passkey_origins: Vec<String> = Vec::new(), origins, plain;
        /// Passkeys: the relying party's id, the domain passkeys are bound to (default: the
        /// host of the first of `AUTH_PASSKEY_ORIGINS`); each origin must be it or under it.
        AUTH_PASSKEY_RP_ID => auth_passkey_rp_id: Option<String> = None, some_text, plain;
    }
}

crate::settings! {
    /// List requests: page sizes and the limits on filters.
    #[derive(Clone)]
    #[non_exhaustive]
    pub struct ListSettings {
        /// Items per page when a list request names none.
        DEFAULT_PAGE_SIZE => default_page_size: u32 = 25, positive, plain;
        /// Largest `page_size` a list request may ask for.
        MAX_PAGE_SIZE => max_page_size: u32 = 100, positive, plain;
        /// Longest accepted `filter` expression of a list request, in characters.
        FILTER_MAX_LENGTH => filter_max_length: u32 = 2000, positive, plain;
        /// Deepest nesting (parentheses and `not`) of a `filter` expression.
        FILTER_MAX_DEPTH => filter_max_depth: u32 = 16, positive, plain;
        /// Most filters one list request may carry (400 above).
        MAX_FILTERS => max_filters: u32 = 20, positive, plain;
        /// Most values one `__in` filter may carry (400 above).
        MAX_IN_VALUES => max_in_values: u32 = 100, positive, plain;
        /// Most groups one aggregate answer (`GET <prefix>aggregate/`) holds per page: its
        /// largest `page_size` (and the default, up to 100).
        AGGREGATE_MAX_GROUPS => aggregate_max_groups: u32 = 1000, positive, plain;
        /// Seconds one aggregate's query may run before it is stopped (503).
        AGGREGATE_TIMEOUT => aggregate_timeout: u64 = 10, seconds, plain;
    }
}

crate::settings! {
    /// Operations: health and readiness routes, metrics, logs, shutdown.
    #[derive(Clone)]
    #[non_exhaustive]
    pub struct OpsSettings {
        /// Whether the health route exists.
        HEALTH_ENDPOINT_ENABLED => health_endpoint_enabled: bool = true, boolean, plain;
        /// Path of the health route.
        HEALTH_ENDPOINT_PATH => health_endpoint_path: String = "/health".to_owned(), path, plain;
        /// Path of the readiness route (503 until ready and from shutdown on).
        READINESS_PATH => readiness_path: String = "/ready".to_owned(), path, plain;
        /// Whether the Prometheus metrics route exists.
        METRICS_ENABLED => metrics_enabled: bool = false, boolean, plain;
        /// Path of the Prometheus metrics route.
        METRICS_PATH => metrics_path: String = "/metrics".to_owned(), path, plain;
        /// When set, the metrics route wants `Authorization: Bearer <token>`.
        METRICS_TOKEN => metrics_token: Option<Secret> = None, trimmed_secret, secret;
        /// `text` (human-readable) or `json` (one object per line).
        LOG_FORMAT => log_format: LogFormat = LogFormat::Text, log_format, plain;
        /// Seconds a graceful shutdown waits for requests in flight.
        SHUTDOWN_TIMEOUT => shutdown_timeout: u64 = 30, whole_seconds, plain;
        /// Live updates (`realtime` feature): most recorded events kept per resource; a
        /// client resuming from before them gets `reset`.
        REALTIME_RETENTION_EVENTS => realtime_retention_events: u32 = 10_000, positive, plain;
        /// Live updates: seconds recorded events are kept.
        REALTIME_RETENTION_SECONDS => realtime_retention_seconds: u64 = 3600, seconds, plain;
        /// Live updates: seconds between heartbeat comments on an idle stream.
        REALTIME_HEARTBEAT => realtime_heartbeat: u64 = 15, seconds, plain;
        /// Live updates: most streams open at once in this process (503 above).
        REALTIME_MAX_STREAMS => realtime_max_streams: u32 = 1000, positive, plain;
        /// Live updates: most streams one user (or all anonymous callers) keeps open (429
        /// above); also the most unused stream tickets one user holds (429 above) and the most
        /// dropped streams kept for a resume per user and feed (that user's oldest go first).
        REALTIME_MAX_STREAMS_PER_USER => realtime_max_streams_per_user: u32 = 5, positive, plain;
        /// Live updates: events queued for one stream; a subscriber further behind gets
        /// `reset` and its stream ends.
        REALTIME_QUEUE => realtime_queue: u32 = 256, positive, plain;
        /// Live updates: most rows one stream's view may hold (the keys it keeps to tell
        /// an update from a creation and to send deletions); 400 above at subscription,
        /// `reset` and the end of the stream when the view grows past it.
        REALTIME_VIEW_MAX => realtime_view_max: u32 = 10_000, positive, plain;
        /// Live updates: seconds between checks that a stream's session still holds
        /// (logout everywhere, password change, disabled account end it).
        REALTIME_SESSION_CHECK => realtime_session_check: u64 = 5, seconds, plain;
        /// Live updates: seconds this instance keeps a dropped stream's state, so that a client
        /// reconnecting with `Last-Event-ID` gets what it missed.
        REALTIME_RESUME_SECONDS => realtime_resume_seconds: u64 = 300, whole_seconds, plain;
        /// Files (`files` feature): seconds a signed download link stays valid.
        FILES_LINK_SECONDS => files_link_seconds: u64 = 300, whole_seconds, plain;
        /// Files (`thumbnails` feature): images this process decodes at once to make
        /// thumbnails (503 with `Retry-After` above).
        FILES_THUMB_MAX_DECODES => files_thumb_max_decodes: u32 = 2, positive, plain;
        /// Files: where they are kept. Unset: `files/` in the data folder. With the `s3`
        /// feature, `s3://bucket[/prefix]?endpoint=URL&region=NAME`: S3-compatible object
        /// storage.
        FILES_STORAGE => files_storage: Option<String> = None, some_text, plain;
        /// Files: the access key id for `s3://` storage.
        FILES_S3_ACCESS_KEY_ID => files_s3_access_key_id: Option<String> = None, some_text, plain;
        /// Files: the secret access key for `s3://` storage.
        FILES_S3_SECRET_ACCESS_KEY => files_s3_secret_access_key: Option<Secret> = None, trimmed_secret, secret;
        /// Files (`files` feature): seconds between two backups of an SQLite database into
        /// the files' storage (`VACUUM INTO`, stored under `crudforge_backups/`); 0: none.
        SQLITE_BACKUP_INTERVAL => sqlite_backup_interval: u64 = 0, whole_seconds, plain;
        /// Files: the backups kept; older ones are removed after each new one.
        SQLITE_BACKUP_KEEP => sqlite_backup_keep: u32 = 7, positive, plain;
        /// Jobs (`jobs` feature): jobs this instance runs at once (0: it runs none, and
        /// takes no schedule's tick; other instances do).
        JOBS_WORKERS => jobs_workers: u32 = 4, count, plain;
        /// Jobs: seconds between two looks for due jobs and schedules' ticks when idle.
        JOBS_POLL_INTERVAL => jobs_poll_interval: u64 = 1, seconds, plain;
        /// Jobs: seconds a claim is leased for; a running job's lease is renewed every third
        /// of it, and a job whose lease ran out (its worker died) is claimed again.
        JOBS_LEASE_SECONDS => jobs_lease_seconds: u64 = 300, seconds, plain;
        /// Jobs: seconds before the second attempt of a failed job; doubled for each attempt
        /// after it, at most an hour, less a random part of up to half (jitter).
        JOBS_RETRY_BASE => jobs_retry_base: u64 = 10, seconds, plain;
        /// Jobs: seconds an ended job (done, failed, cancelled) is kept before it is pruned.
        JOBS_KEEP_SECONDS => jobs_keep_seconds: u64 = 7 * 86_400, seconds, plain;
        /// Mail (`mail` feature): how mail leaves: `smtp` (through `SMTP_URL`), `file` (one
        /// `.eml` file a message in `MAIL_DIR`), `log` (the log); unset: no mail is sent.
        MAIL_TRANSPORT => mail_transport: Option<String> = None, some_text, plain;
        /// Mail: the SMTP server, `smtp://user:pass@host:port` (STARTTLS required) or
        /// `smtps://...` (implicit TLS); `?tls=none` only for a server on a loopback address.
        SMTP_URL => smtp_url: Option<String> = None, some_text, uri_password;
        /// Mail: the sender, `address` or `Name <address>`.
        MAIL_FROM => mail_from: Option<String> = None, some_text, plain;
        /// Mail: where links in mails start (`https://app.example.com`); each flow adds its
        /// path (`/reset-password?token=...`).
        MAIL_LINK_BASE => mail_link_base: Option<String> = None, some_text, plain;
        /// Mail: the folder of the `file` transport (default: `mail/` in the data folder).
        MAIL_DIR => mail_dir: Option<String> = None, some_text, plain;
        /// Mail: a folder of templates that replace the embedded ones
        /// (`<locale>/<flow>.subject`, `.txt`, `.html`).
        MAIL_TEMPLATES_DIR => mail_templates_dir: Option<String> = None, some_text, plain;
        /// Mail: verification of the address of every new account: `optional` (a link is
        /// mailed; logging in does not wait for it) or `required` (logging in is refused until
        /// the link is followed); unset or `off`: none.
        MAIL_VERIFICATION => mail_verification: Option<String> = None, some_text, plain;
        /// Mail: users may sign in with a link mailed to their address (no password).
        MAIL_SIGN_IN => mail_sign_in: bool = false, boolean, plain;
        /// Mail: seconds a verification link stays valid.
        MAIL_VERIFY_SECONDS => mail_verify_seconds: u64 = 86_400, seconds, plain;
        /// Mail: seconds the link that confirms a new address stays valid.
        MAIL_EMAIL_CHANGE_SECONDS => mail_email_change_seconds: u64 = 86_400, seconds, plain;
        /// Mail: seconds the link mailed to the old address after a change, which puts it
        /// back, stays valid.
        MAIL_REVERT_SECONDS => mail_revert_seconds: u64 = 7 * 86_400, seconds, plain;
        /// Mail: seconds a sign-in link stays valid.
        MAIL_SIGN_IN_SECONDS => mail_sign_in_seconds: u64 = 900, seconds, plain;
        /// Mail: seconds a link to set a new password stays valid.
        MAIL_RESET_SECONDS => mail_reset_seconds: u64 = 3600, seconds, plain;
        /// Mail: mails the flows send at the request of one client address (IPv6 by its /64)
        /// in `MAIL_ADDRESS_WINDOW` seconds (429 past it; 0: no limit). Besides, an address
        /// gets at most one mail of a flow a minute.
        MAIL_MAX_PER_ADDRESS => mail_max_per_address: u32 = 20, count, plain;
        /// Mail: the window of `MAIL_MAX_PER_ADDRESS`, in seconds.
        MAIL_ADDRESS_WINDOW => mail_address_window: u64 = 3600, seconds, plain;
        /// Mail: mails one instance hands to the transport at once. A crash may send each mail
        /// then in flight twice; 1 (the default) bounds that to one mail a crash.
        MAIL_IN_FLIGHT => mail_in_flight: u32 = 1, positive, plain;
        /// Webhooks (`webhooks` feature): the subscriptions declared in the configuration,
        /// by name; each reads its own `WEBHOOK_<NAME>_*` keys
        /// ([`WebhookSettings`](crate::config::WebhookSettings)).
        WEBHOOKS => webhooks: Vec<String> = Vec::new(), names, plain;
        /// Webhooks: addresses (or CIDR blocks) an endpoint may resolve to
        /// although they are private, loopback or link-local (refused otherwise).
        WEBHOOKS_ALLOW_NETWORKS => webhooks_allow_networks: Vec<IpNet> = Vec::new(), networks, plain;
        /// Webhooks: seconds one attempt may take, connecting included.
        WEBHOOKS_TIMEOUT => webhooks_timeout: u64 = 10, seconds, plain;
        /// Webhooks: messages in flight to one subscription's endpoint at once, across all
        /// instances.
        WEBHOOKS_IN_FLIGHT => webhooks_in_flight: u32 = 8, positive, plain;
        /// Webhooks: the unit of the retry schedule, in seconds: the attempts after the first
        /// wait 1, 60, 360, 1440, 3600, 7200 and 7200 of it (5 s to 10 h with the default,
        /// about 27 hours in all), each less a random part of up to a fifth; 0 retries at once.
        WEBHOOKS_RETRY_BASE => webhooks_retry_base: u64 = 5, whole_seconds, plain;
        /// Webhooks: attempts of one message before it goes to the dead letters (at most 8).
        WEBHOOKS_MAX_ATTEMPTS => webhooks_max_attempts: u32 = 8, positive, plain;
        /// Webhooks: failed attempts in a row after which a subscription's endpoint is
        /// disabled, with the reason (0: never).
        WEBHOOKS_DISABLE_AFTER => webhooks_disable_after: u32 = 50, count, plain;
        /// Webhooks: most messages a subscription may have waiting; past it the subscription
        /// is disabled, with the reason, and the events stop waiting for it.
        WEBHOOKS_BACKLOG_MAX => webhooks_backlog_max: u32 = 100_000, positive, plain;
        /// Webhooks: seconds a delivered or dead message is kept (for replays and the dead
        /// letters) before it is pruned.
        WEBHOOKS_KEEP_SECONDS => webhooks_keep_seconds: u64 = 7 * 86_400, seconds, plain;
    }
}
