//! The command line: the library's commands (`serve`, `migrate`, `schema check`,
//! `create-user`, `create-token`, `grant-role`, `revoke-role`, `print-indexes`; see
//! `docs/cli.md`) and the reference application's own: `create-domain`, `seed-critters`, and
//! the profile names of `create-user`.

use crate::api::critters::Critter;
use crate::api::domains::{RefDomain, RefDomainCreate};
use crate::api::schema::critters;
use crate::api::users::AppUser;
use clap::{Args, Subcommand};
use crudforge::prelude::*;
use diesel::prelude::*;
use futures_util::future::LocalBoxFuture;
use std::process::ExitCode;
use uuid::Uuid;

/// The reference application's own commands, beside the library's.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a domain; prints its id.
    CreateDomain {
        /// Unique name.
        #[arg(long)]
        name: String,
    },
    /// Insert demo critters; prints their ids, one a line.
    SeedCritters {
        /// How many.
        #[arg(long, default_value_t = 100)]
        count: usize,
    },
}

/// The reference application's options of `create-user`: the profile names of its user.
#[derive(Debug, Args)]
pub struct UserNames {
    /// First name.
    #[arg(long)]
    pub first_name: Option<String>,
    /// Last name.
    #[arg(long)]
    pub last_name: Option<String>,
}

/// The command line of the reference application.
pub fn app() -> App<Command, UserNames> {
    App::new("reference-app", build_api)
        .about("The crudforge reference application")
        .version(env!("CARGO_PKG_VERSION"))
        .migrations(crate::api::migrations)
        .commands(run)
        .create_user_args(set_names)
}

/// Runs the command line; errors become one line on stderr and a non-zero exit.
pub fn main() -> ExitCode {
    app().main()
}

/// Builds the application's `Api`, reading the application's own settings
/// ([`RecoverySettings`](crate::api::recovery::RecoverySettings)) from the environment.
///
/// # Errors
///
/// Bad configuration, such as a malformed `RECOVERY_*` value.
pub fn build_api(config: Config, db: Database) -> Result<Api, BoxError> {
    let recovery = crate::api::recovery::RecoverySettings::from_env()?;
    let api = Api::new(config, db)?;
    Ok(crate::api::routes::mount(api, recovery)?)
}

/// Opens the database, runs pending migrations (the library's and the application's);
/// returns it with the names of the migrations applied now.
///
/// # Errors
///
/// Bad configuration, an unreachable database, or a failed migration.
pub async fn open_and_migrate(config: &Config) -> Result<(Database, Vec<String>), BoxError> {
    let db = Database::connect(config).await?;
    let applied = db.run_migrations(Some(crate::api::migrations())).await?;
    Ok((db, applied))
}

/// `create-user --first-name F --last-name L`: the names, written in the transaction that
/// creates the user.
fn set_names(conn: &mut Conn, id: Uuid, names: UserNames) -> LocalBoxFuture<'_, Result<(), Error>> {
    Box::pin(async move {
        if names.first_name.is_some() || names.last_name.is_some() {
            AppUser::set_names(conn, id, names.first_name, names.last_name).await?;
        }
        Ok(())
    })
}

/// Runs one of the application's own commands.
///
/// # Errors
///
/// Whatever stops the command; the message is meant for one line on stderr.
async fn run(command: Command, ctx: Context) -> Result<(), BoxError> {
    let db = ctx.database().await?;
    match command {
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
            .map_err(|e| -> BoxError {
                if e.problem().status == 409 {
                    format!("a domain named {name} already exists").into()
                } else {
                    e.problem().detail.into()
                }
            })?;
            ctx.println(d.id);
        }
        Command::SeedCritters { count } => {
            for id in seed_critters(&db, count).await? {
                ctx.println(id);
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

/// The columns of one seeded critter.
type SeedRow = (
    diesel::dsl::Eq<critters::id, Portable<Uuid>>,
    diesel::dsl::Eq<critters::created_at, Portable<chrono::DateTime<chrono::Utc>>>,
    diesel::dsl::Eq<critters::updated_at, Portable<chrono::DateTime<chrono::Utc>>>,
    diesel::dsl::Eq<critters::name, String>,
    diesel::dsl::Eq<critters::species, String>,
    diesel::dsl::Eq<critters::cuteness_level, i32>,
);

/// Inserts `rows` on `conn`: one statement a row on SQLite (whose Diesel backend has no
/// multi-row `INSERT`), 1000 rows a statement on PostgreSQL.
async fn insert_critters(conn: &mut Conn, rows: &[SeedRow]) -> Result<(), Error> {
    match conn {
        Conn::Sqlite(c) => {
            for row in rows {
                let insert = diesel::insert_into(critters::table).values(row.clone());
                diesel_async::RunQueryDsl::execute(insert, &mut **c).await?;
            }
        }
        Conn::Postgres(c) => {
            for chunk in rows.chunks(1000) {
                let insert = diesel::insert_into(critters::table).values(chunk.to_vec());
                diesel_async::RunQueryDsl::execute(insert, &mut **c).await?;
            }
        }
    }
    Ok(())
}

/// Inserts `count` critters in batches inside one transaction; returns their ids. The
/// critters' blueprint offers a feed, so their creations are recorded in the same transaction:
/// streams open on `/api/critters/events/` receive them once it commits.
///
/// # Errors
///
/// Database errors.
pub async fn seed_critters(db: &Database, count: usize) -> Result<Vec<Uuid>, Error> {
    let base = crate::api::now();
    let mut ids = Vec::with_capacity(count);
    let mut rows: Vec<SeedRow> = Vec::with_capacity(count);
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
    // All or nothing: one transaction, multi-row inserts of up to 1000 rows.
    let mut conn = db.get().await?;
    conn.begin(TxMode::Write).await?;
    let written = async {
        insert_critters(&mut conn, &rows).await?;
        crudforge::realtime::record_changes::<Critter>(
            &mut conn,
            crudforge::realtime::EventKind::Created,
            ids.iter().map(Uuid::to_string),
        )
        .await
    }
    .await;
    conn.finish(written).await?;
    Ok(ids)
}
