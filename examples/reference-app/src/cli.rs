//! The command line: serve, migrate, schema check, and fixtures (users, tokens, domains,
//! critters).

use crate::api::domains::{RefDomain, RefDomainCreate};
use crate::api::schema::critters;
use crate::api::users::AppUser;
use clap::{Parser, Subcommand};
use crudforge::sql_types::Portable;
use crudforge::users::Role;
use crudforge::{Api, Config, Database, Resource};
use diesel::prelude::*;
use std::path::Path;
use std::process::ExitCode;
use uuid::Uuid;

/// Command line of the reference application.
#[derive(Debug, Parser)]
#[command(
    name = "reference-app",
    version,
    about = "The crudforge reference application"
)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run pending migrations, then serve HTTP (the default).
    Serve {
        /// Address to listen on (also BIND).
        #[arg(long, env = "BIND", default_value = "127.0.0.1:8080")]
        bind: String,
    },
    /// Run pending migrations and exit.
    Migrate,
    /// Create a user; prints its id.
    CreateUser {
        /// E-mail address.
        #[arg(long)]
        email: String,
        /// Password (visible to other local users in the process list: prefer
        /// `--password-stdin` or the CRUDFORGE_PASSWORD environment variable).
        #[arg(long, env = "CRUDFORGE_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long, conflicts_with = "password")]
        password_stdin: bool,
        /// Grant the ADMIN role (in every domain).
        #[arg(long)]
        admin: bool,
        /// Grant the SUPERADMIN role (the only one that grants SUPERADMIN or unscoped ADMIN).
        #[arg(long)]
        superadmin: bool,
        /// First name.
        #[arg(long)]
        first_name: Option<String>,
        /// Last name.
        #[arg(long)]
        last_name: Option<String>,
        /// Create the account disabled.
        #[arg(long)]
        disabled: bool,
    },
    /// Store a token (API key) for a user, for `token_login`.
    CreateToken {
        /// The user's e-mail address.
        #[arg(long)]
        email: String,
        /// The token value, at least 32 characters (visible in the process list: prefer
        /// `--token-stdin` or the CRUDFORGE_TOKEN environment variable).
        #[arg(long, env = "CRUDFORGE_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Read the token value from the first line of standard input.
        #[arg(long, conflicts_with = "token")]
        token_stdin: bool,
        /// What the token is for.
        #[arg(long)]
        description: Option<String>,
    },
    /// Create a domain; prints its id.
    CreateDomain {
        /// Unique name.
        #[arg(long)]
        name: String,
    },
    /// Print the `CREATE INDEX` statement of every index the mounted resources declare
    /// (`#[resource(index(...))]`), one a line, for a migration's `up.sql`. Touches no
    /// database.
    PrintIndexes {
        /// Print the `DROP INDEX` statements instead, for `down.sql`.
        #[arg(long)]
        down: bool,
    },
    /// Compare the database with the mounted resources without migrating it: prints one
    /// `table.column: what differs` line per difference and fails when there is one.
    SchemaCheck,
    /// Insert demo critters; prints their ids, one a line.
    SeedCritters {
        /// How many.
        #[arg(long, default_value_t = 100)]
        count: usize,
    },
}

/// Loads `<dir>/.env`, if there is one, into the environment; variables already set keep
/// their values. Only that directory is read, never its parents: a `.env` somewhere above
/// the working directory (another user's, a checkout's) must not set `JWT_SECRET_KEY`.
///
/// # Errors
///
/// The file exists but cannot be read or has a malformed line.
pub fn load_dotenv(dir: &Path) -> Result<(), String> {
    let path = dir.join(".env");
    match dotenvy::from_path(&path) {
        Ok(()) => Ok(()),
        Err(dotenvy::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Runs the command line; errors become one line on stderr and a non-zero exit.
pub fn main() -> ExitCode {
    if let Err(e) = load_dotenv(Path::new("")) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    // A bad configuration is reported by `run`; the log format falls back to text meanwhile.
    let format = Config::from_env()
        .map(|c| c.ops.log_format)
        .unwrap_or_default();
    let _ = crudforge::logging::init(format);
    let cli = Cli::parse();
    let result = actix_web::rt::System::new().block_on(run(cli));
    crudforge::logging::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let line = e.to_string().replace('\n', " ");
            eprintln!("error: {line}");
            ExitCode::FAILURE
        }
    }
}

/// Opens and migrates the database the configuration names.
///
/// # Errors
///
/// Bad configuration, an unreachable database, or a failed migration.
pub async fn open(config: &Config) -> Result<Database, Box<dyn std::error::Error>> {
    open_and_migrate(config).await.map(|(db, _)| db)
}

/// Opens the database and runs pending migrations; returns it with the names of the
/// migrations applied now.
///
/// # Errors
///
/// Bad configuration, an unreachable database, or a failed migration.
pub async fn open_and_migrate(
    config: &Config,
) -> Result<(Database, Vec<String>), Box<dyn std::error::Error>> {
    let opened = match Database::connect(config).await {
        Ok(db) => db
            .run_migrations(Some(crate::api::migrations()))
            .await
            .map(|applied| (db, applied)),
        Err(e) => Err(e),
    };
    opened.map_err(|e| describe(config, e))
}

/// A database error for one line on stderr: the driver's message ("error connecting to
/// server") does not say which server.
fn describe(config: &Config, e: crudforge::db::DbError) -> Box<dyn std::error::Error> {
    match (&e, config.db.database_uri.as_deref().and_then(server_of)) {
        (crudforge::db::DbError::Connect(_), Some(server)) => {
            format!("{e} (server {server})").into()
        }
        _ => Box::<dyn std::error::Error>::from(e),
    }
}

/// The `host:port` part of a PostgreSQL URL, without user or password.
fn server_of(uri: &str) -> Option<String> {
    let rest = uri.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let server = rest.split(['/', '?']).next().unwrap_or(rest);
    (!server.is_empty() && !uri.starts_with("sqlite")).then(|| server.to_owned())
}

/// Builds the application's `Api`, reading the application's own settings
/// ([`RecoverySettings`](crate::api::recovery::RecoverySettings)) from the environment.
///
/// # Errors
///
/// Bad configuration, such as a malformed `RECOVERY_*` value.
pub fn build_api(config: Config, db: Database) -> Result<Api, Box<dyn std::error::Error>> {
    let recovery = crate::api::recovery::RecoverySettings::from_env()?;
    let api = Api::new(config, db)?;
    Ok(crate::api::routes::mount(api, recovery)?)
}

/// Listens on `bind` at once with readiness 503, runs pending migrations, then turns ready;
/// stops gracefully on SIGTERM or Ctrl-C.
///
/// # Errors
///
/// Bad configuration, an unreachable database, a failed migration, or an address that
/// cannot be bound.
pub async fn serve(config: Config, bind: &str) -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::connect(&config)
        .await
        .map_err(|e| describe(&config, e))?;
    let api = build_api(config, db.clone())?;
    api.readiness().set_starting();
    let server = api.server(bind)?;
    let handle = server.handle();
    let running = actix_web::rt::spawn(server);
    tracing::info!("listening on http://{bind} (docs at http://{bind}/docs); migrating");
    match db.run_migrations(Some(crate::api::migrations())).await {
        Ok(applied) => {
            if !applied.is_empty() {
                tracing::info!(count = applied.len(), "applied migrations");
            }
            // SCHEMA_CHECK: warn logs each difference; strict refuses to start.
            if let Err(e) = api.apply_schema_check().await {
                handle.stop(false).await;
                return Err(e.into());
            }
            api.readiness().set_ready();
            tracing::info!("ready");
        }
        Err(e) => {
            handle.stop(false).await;
            return Err(describe(api.config(), e));
        }
    }
    running.await??;
    Ok(())
}

/// The `CREATE INDEX` (or, with `down`, `DROP INDEX`) statement of every index the mounted
/// resources declare. The API is built over a private in-memory database and a placeholder
/// signing key, so no file is opened, created or migrated.
///
/// # Errors
///
/// Bad configuration, or a blueprint that cannot be mounted.
pub async fn index_statements(
    config: Config,
    down: bool,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let scratch = Database::open(
        crudforge::db::Target::Sqlite(":memory:".into()),
        crudforge::db::DbOptions::default(),
    )
    .await?;
    // No token is ever signed here: a fixed key keeps `Api::new` from generating a key file.
    let config = config.with(|c| {
        c.db.database_uri = None;
        c.auth.jwt_secret_key = Some(crudforge::config::Secret::new(
            "print-indexes signs nothing with this placeholder key",
        ));
    });
    let api = build_api(config, scratch)?;
    Ok(api
        .declared_indexes()
        .iter()
        .map(|spec| {
            if down {
                spec.drop_sql()
            } else {
                spec.create_sql()
            }
        })
        .collect())
}

/// Runs one command.
///
/// # Errors
///
/// Whatever stops the command; the message is meant for one line on stderr.
pub async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let command = cli.command.unwrap_or(Command::Serve {
        bind: std::env::var("BIND").unwrap_or_else(|_| "127.0.0.1:8080".to_owned()),
    });
    if let Command::Serve { bind } = &command {
        return serve(config, bind).await;
    }
    if let Command::PrintIndexes { down } = command {
        for line in index_statements(config, down).await? {
            println!("{line}");
        }
        return Ok(());
    }
    if let Command::SchemaCheck = command {
        let db = Database::connect(&config)
            .await
            .map_err(|e| describe(&config, e))?;
        let drifts = build_api(config, db)?.check_schema().await?;
        for drift in &drifts {
            println!("{drift}");
        }
        return match drifts.len() {
            0 => Ok(()),
            n => Err(format!("{n} difference(s) between the database and the resources").into()),
        };
    }
    let (db, applied) = open_and_migrate(&config).await?;
    let policy = config.password_policy();
    match command {
        Command::Serve { .. } | Command::PrintIndexes { .. } | Command::SchemaCheck => {
            unreachable!("handled above")
        }
        Command::Migrate if applied.is_empty() => eprintln!("migrations are up to date"),
        Command::Migrate => eprintln!("applied {} migration(s)", applied.len()),
        Command::CreateUser {
            email,
            password,
            password_stdin,
            admin,
            superadmin,
            first_name,
            last_name,
            disabled,
        } => {
            let password = secret("password", password, password_stdin)?;
            let mut roles = Vec::new();
            roles.extend(admin.then_some(Role::Admin));
            roles.extend(superadmin.then_some(Role::SuperAdmin));
            let names = (first_name, last_name);
            let id = create_user(&db, &email, &password, policy, !disabled, names, &roles).await?;
            println!("{id}");
        }
        Command::CreateToken {
            email,
            token,
            token_stdin,
            description,
        } => {
            let token = secret("token", token, token_stdin)?;
            let (user, _, _) = crudforge::users::find_by_email(&db, &email)
                .await?
                .ok_or_else(|| format!("no user with e-mail {email}"))?;
            crudforge::users::store_token(&db, user, &token, description.as_deref(), None)
                .await
                .map_err(|e| -> Box<dyn std::error::Error> {
                    if e.problem().status == 409 {
                        "that token value is already stored".into()
                    } else {
                        e.problem().detail.into()
                    }
                })?;
        }
        Command::CreateDomain { name } => {
            let mut conn = db.get().await?;
            let d = RefDomain::insert(
                &mut conn,
                RefDomainCreate {
                    name: name.clone(),
                    active: true,
                    domain_type: None,
                    lat: None,
                    lon: None,
                    area_geojson: None,
                },
            )
            .await
            .map_err(|e| -> Box<dyn std::error::Error> {
                if e.problem().status == 409 {
                    format!("a domain named {name} already exists").into()
                } else {
                    e.problem().detail.into()
                }
            })?;
            println!("{}", d.id);
        }
        Command::SeedCritters { count } => {
            for id in seed_critters(&db, count).await? {
                println!("{id}");
            }
        }
    }
    Ok(())
}

const SPECIES: &[&str] = &[
    "cat", "dog", "otter", "hedgehog", "owl", "fox", "rabbit", "axolotl",
];
const NAMES: &[&str] = &[
    "Mochi", "Pepper", "Biscuit", "Noodle", "Clover", "Pip", "Maple", "Ziggy",
];

/// Inserts `count` critters in batches inside one transaction; returns their ids.
///
/// # Errors
///
/// Database errors.
pub async fn seed_critters(db: &Database, count: usize) -> Result<Vec<Uuid>, crudforge::Error> {
    let base = crate::api::now();
    type Row = (
        diesel::dsl::Eq<critters::id, Portable<Uuid>>,
        diesel::dsl::Eq<critters::created_at, Portable<chrono::DateTime<chrono::Utc>>>,
        diesel::dsl::Eq<critters::updated_at, Portable<chrono::DateTime<chrono::Utc>>>,
        diesel::dsl::Eq<critters::name, String>,
        diesel::dsl::Eq<critters::species, String>,
        diesel::dsl::Eq<critters::cuteness_level, i32>,
    );
    let mut ids = Vec::with_capacity(count);
    let mut rows: Vec<Row> = Vec::with_capacity(count);
    for i in 0..count {
        let id = Uuid::new_v4();
        ids.push(id);
        // Distinct, increasing creation times keep the default order stable.
        let at = base + chrono::Duration::microseconds(i64::try_from(i).unwrap_or(0));
        rows.push((
            critters::id.eq(Portable(id)),
            critters::created_at.eq(Portable(at)),
            critters::updated_at.eq(Portable(at)),
            critters::name.eq(format!("{} {}", NAMES[i % NAMES.len()], i + 1)),
            critters::species.eq(SPECIES[i % SPECIES.len()].to_owned()),
            critters::cuteness_level.eq(i32::try_from(i % 10).unwrap_or(0) + 1),
        ));
    }
    let mut conn = db.get().await?;
    match &mut conn {
        // SQLite: one synchronous transaction on the connection's thread.
        crudforge::db::Conn::Sqlite(c) => {
            c.spawn_blocking(move |c| {
                c.transaction(|c| {
                    for row in rows {
                        diesel::RunQueryDsl::execute(
                            diesel::insert_into(critters::table).values(row),
                            c,
                        )?;
                    }
                    diesel::QueryResult::Ok(())
                })
            })
            .await?;
        }
        // PostgreSQL: multi-row inserts, all in one transaction (all or nothing).
        crudforge::db::Conn::Postgres(c) => {
            use diesel_async::SimpleAsyncConnection;
            c.batch_execute("BEGIN").await?;
            let mut inserted = Ok(0);
            for chunk in rows.chunks(1000) {
                inserted = diesel_async::RunQueryDsl::execute(
                    diesel::insert_into(critters::table).values(chunk.to_vec()),
                    &mut **c,
                )
                .await;
                if inserted.is_err() {
                    break;
                }
            }
            match inserted {
                Ok(_) => c.batch_execute("COMMIT").await?,
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK").await;
                    return Err(e.into());
                }
            }
        }
    }
    Ok(ids)
}

/// Creates a user with its profile names and unscoped roles in one transaction: the password
/// is hashed first, then either everything is written or nothing is (a failed grant leaves no
/// half-made account behind).
async fn create_user(
    db: &Database,
    email: &str,
    password: &str,
    policy: crudforge::auth::PasswordPolicy,
    enabled: bool,
    (first_name, last_name): (Option<String>, Option<String>),
    roles: &[Role],
) -> Result<Uuid, Box<dyn std::error::Error>> {
    let hash = crudforge::users::new_user_hash(email, password, policy)
        .await
        .map_err(|e| e.problem().detail)?;
    let mut conn = db.get().await?;
    crudforge::db::tx::begin(&mut conn, crudforge::db::tx::TxMode::Write).await?;
    let work = async {
        let id = crudforge::users::create_user_in(&mut conn, email, &hash, enabled).await?;
        if first_name.is_some() || last_name.is_some() {
            AppUser::set_names(&mut conn, id, first_name, last_name).await?;
        }
        for role in roles {
            crudforge::users::grant_role_in(&mut conn, id, role.as_str(), None).await?;
        }
        Ok(id)
    }
    .await;
    crudforge::db::tx::finish(&mut conn, work)
        .await
        .map_err(|e| -> Box<dyn std::error::Error> {
            if e.problem().status == 409 {
                format!("a user with e-mail {email} already exists").into()
            } else {
                e.problem().detail.into()
            }
        })
}

/// A secret from its option (or environment variable), or from the first line of standard
/// input, so that it need not appear on the command line.
fn secret(
    name: &str,
    given: Option<String>,
    from_stdin: bool,
) -> Result<String, Box<dyn std::error::Error>> {
    if let Some(v) = given {
        return Ok(v);
    }
    if !from_stdin {
        return Err(format!(
            "give the {name} with --{name}-stdin, CRUDFORGE_{} or --{name}",
            name.to_uppercase()
        )
        .into());
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}
