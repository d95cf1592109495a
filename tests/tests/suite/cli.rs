//! The command line applications embed (`crudforge::cli::App`), driven with argument vectors on
//! both backends: `create-user` (password from standard input, never from the command line;
//! roles; the application's options and hook, in the user's transaction) then login;
//! `create-token` (the token from standard input, never from the command line); `grant-role`
//! and `revoke-role` (seen at once by `me/`, sessions untouched, the role set and the domain
//! checked); `schema check` exit codes and lines; `print-indexes`; `migrate`; `jobs` (run,
//! list, retry, cancel, run a schedule now); the application's own commands; bad input as one
//! `error:` line and a non-zero status.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use crudforge::cli::{App, BoxError, Console, Context};
use crudforge::db::Conn;
use crudforge::users::{Domain, UserBlueprint};
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use futures_util::future::LocalBoxFuture;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    cli_notes (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        title -> Text,
        body -> Text,
    }
}

/// A resource with a declared index, so that `schema check` and `print-indexes` have work.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = cli_notes)]
#[resource(rules = crudforge::perms::Open, index("title"))]
pub struct CliNote {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
    pub body: String,
}

fn build(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?
        .mount(UserBlueprint::default())?
        .mount(CliNote::blueprint("/api/notes/"))?)
}

/// The application's own command.
#[derive(Debug, Subcommand)]
enum Extra {
    /// Counts the users.
    CountUsers {
        /// Added to the count.
        #[arg(long, default_value_t = 0)]
        plus: i64,
    },
}

async fn extra(command: Extra, ctx: Context) -> Result<(), BoxError> {
    let Extra::CountUsers { plus } = command;
    let db = ctx.database().await?;
    ctx.println(users(&db).await + plus);
    Ok(())
}

/// The application's options of `create-user`.
#[derive(Debug, Args)]
struct Refusal {
    /// Makes the hook fail, after the user's row is written.
    #[arg(long)]
    refuse: bool,
}

fn hook(_: &mut Conn, _: Uuid, r: Refusal) -> LocalBoxFuture<'_, Result<(), crudforge::Error>> {
    Box::pin(async move {
        if r.refuse {
            return Err(crudforge::Error::invalid_field(
                "refuse",
                "the hook said no",
            ));
        }
        Ok(())
    })
}

async fn setup(t: &TestDb) -> (Config, Database) {
    let config = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&config).await;
    let (id, at) = match db.backend() {
        Backend::Sqlite => ("TEXT", "TEXT"),
        Backend::Postgres => ("UUID", "TIMESTAMPTZ"),
    };
    execute(
        &db,
        &format!(
            "CREATE TABLE cli_notes (id {id} PRIMARY KEY, created_at {at} NOT NULL,
             updated_at {at} NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL);
             CREATE INDEX cli_notes_title_idx ON cli_notes (title);"
        ),
    )
    .await;
    (config, db)
}

fn app(config: &Config) -> App<Extra, Refusal> {
    App::new("notes-app", build)
        .version("1.2.3")
        .config(config.clone())
        .commands(extra)
        .create_user_args(hook)
}

async fn execute(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap();
}

async fn users(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<i64>(
            crudforge::users::schema::users::table.count(),
            c,
        )
        .await
    })
    .unwrap()
}

/// Runs `args` with `stdin`; returns the status, stdout and stderr.
async fn run(app: &App<Extra, Refusal>, args: &[&str], stdin: &str) -> (u8, String, String) {
    let mut console = Console::captured(stdin);
    let mut argv = vec!["notes-app"];
    argv.extend_from_slice(args);
    let status = app.run(argv, &mut console).await;
    (status, console.output(), console.errors())
}

/// A failure: the status, nothing on stdout, one `error:` line containing `expect`.
fn one_error_line(got: &(u8, String, String), status: u8, expect: &str) {
    let (code, out, err) = got;
    assert_eq!(*code, status, "status; stderr: {err}");
    assert_eq!(out, "", "nothing on stdout");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err:?}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(expect),
        "`{expect}` in {:?}",
        lines[0]
    );
}

async fn grants(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<i64>(
            crudforge::users::schema::user_roles::table.count(),
            c,
        )
        .await
    })
    .unwrap()
}

async fn domain(db: &Database, name: &str) -> Uuid {
    let mut conn = db.get().await.unwrap();
    let input: <Domain as Resource>::Create =
        serde_json::from_value(json!({ "name": name })).unwrap();
    Domain::insert(&mut conn, input).await.unwrap().id
}

/// A success: status 0, nothing on stdout, `line` alone on stderr.
fn done(got: &(u8, String, String), line: &str) {
    assert_eq!(
        (got.0, got.1.as_str(), got.2.as_str()),
        (0, "", format!("{line}\n").as_str())
    );
}

async fn login(api: &Api, email: &str, password: &str) -> u16 {
    let app = test::init_service(api.app()).await;
    let req = test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": email, "password": password}));
    test::call_service(&app, req.to_request())
        .await
        .status()
        .as_u16()
}

/// An application whose users and role grants offer feeds (the `realtime` feature).
fn build_with_feeds(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?
        .mount(UserBlueprint::default().crud(|b| b.events()))?
        .mount(crudforge::users::UserRole::blueprint("/api/roles/").events())?)
}

/// The recorded events: (resource, kind, key), in order.
async fn recorded(db: &Database) -> Vec<(String, String, String)> {
    diesel::table! {
        crudforge_events (id) {
            id -> BigInt,
            resource -> Text,
            kind -> Text,
            row_key -> Text,
            created_at -> BigInt,
        }
    }
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        let q = crudforge_events::table
            .order(crudforge_events::id.asc())
            .select((
                crudforge_events::resource,
                crudforge_events::kind,
                crudforge_events::row_key,
            ));
        diesel_async::RunQueryDsl::load(q, c).await
    })
    .unwrap()
}

/// The id of `role`'s grant row.
async fn grant_id(db: &Database, role: &str) -> String {
    use crudforge::users::schema::user_roles;
    let mut conn = db.get().await.unwrap();
    let id: Uuid = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            user_roles::table
                .filter(user_roles::role.eq(role.to_owned()))
                .select(user_roles::id),
            c,
        )
        .await
    })
    .unwrap();
    id.to_string()
}

backend_tests! {
    async fn the_command_lines_writes_are_recorded_for_feeds(t) {
        let (config, db) = setup(&t).await;
        // An application without feeds: nothing is recorded.
        let plain = app(&config);
        assert_eq!(run(&plain, &["create-user", "--email", "bob@example.com", "--password-stdin", "--admin"], "bob secret\n").await.0, 0);
        assert_eq!(recorded(&db).await, []);
        // With feeds on users and role grants, each write is recorded in its transaction.
        let cli = App::new("feeds-app", build_with_feeds).config(config.clone());
        let mut console = Console::captured("alice secret\n");
        let status = cli.run(["feeds-app", "create-user", "--email", "alice@example.com", "--password-stdin", "--admin"], &mut console).await;
        assert_eq!(status, 0, "{}", console.errors());
        let alice = console.output().trim().to_owned();
        let mut console = Console::captured("");
        assert_eq!(cli.run(["feeds-app", "grant-role", "--email", "alice@example.com", "--role", "MODERATOR"], &mut console).await, 0, "{}", console.errors());
        let moderator = grant_id(&db, "MODERATOR").await;
        let mut console = Console::captured("");
        assert_eq!(cli.run(["feeds-app", "revoke-role", "--email", "alice@example.com", "--role", "MODERATOR"], &mut console).await, 0, "{}", console.errors());
        // Refused: nothing written, nothing recorded.
        let mut console = Console::captured("");
        assert_eq!(cli.run(["feeds-app", "revoke-role", "--email", "alice@example.com", "--role", "MODERATOR"], &mut console).await, 1);
        let events = recorded(&db).await;
        let got: Vec<(&str, &str)> = events.iter().map(|(r, k, _)| (r.as_str(), k.as_str())).collect();
        assert_eq!(got, [("users", "created"), ("user_roles", "created"), ("user_roles", "created"), ("user_roles", "deleted")]);
        assert_eq!(events[0].2, alice);
        assert_eq!((events[2].2.as_str(), events[3].2.as_str()), (moderator.as_str(), moderator.as_str()));
    }

    async fn the_jobs_command_runs_lists_retries_cancels_and_runs_a_schedule_now(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        // A job of a kind no handler takes: `jobs run` fails it for good.
        let mut conn = db.get().await.unwrap();
        let id = crudforge::jobs::enqueue(&mut conn, "orphan", &json!({"n": 1})).await.unwrap();
        drop(conn);
        let (code, out, err) = run(&cli, &["jobs", "run"], "").await;
        assert_eq!((code, out.as_str()), (0, ""), "{err}");
        assert!(err.starts_with("ran ") && err.ends_with(" job(s)\n"), "{err}");
        let line = |out: &str| out.lines().find(|l| l.starts_with(&format!("{id}\t"))).map(str::to_owned);
        let (code, out, _) = run(&cli, &["jobs", "list", "--state", "failed"], "").await;
        assert_eq!(code, 0);
        let failed = line(&out).unwrap();
        let fields: Vec<&str> = failed.split('\t').collect();
        assert_eq!((fields[1], fields[2]), ("orphan", "failed"), "{failed}");
        assert!(fields[3].starts_with("1/") && fields[5].contains("no handler"), "{failed}");

        let id_arg = id.to_string();
        done(&run(&cli, &["jobs", "retry", &id_arg], "").await, &format!("job {id} queued again"));
        let (_, out, _) = run(&cli, &["jobs", "list", "--state", "queued"], "").await;
        assert!(line(&out).unwrap().contains("\torphan\tqueued\t0/"), "{out}");
        one_error_line(&run(&cli, &["jobs", "retry", &id_arg], "").await, 1, "is not a failed or cancelled job");
        done(&run(&cli, &["jobs", "cancel", &id_arg], "").await, &format!("job {id} cancelled"));
        one_error_line(&run(&cli, &["jobs", "cancel", &id_arg], "").await, 1, "is not a queued job");
        one_error_line(&run(&cli, &["jobs", "list", "--state", "lost"], "").await, 1, "expected queued, running");

        // A schedule's job, now: its number on stdout; `jobs run` then runs it.
        let (code, out, err) = run(&cli, &["jobs", "run-schedule", "crudforge.prune_jobs"], "").await;
        assert_eq!(code, 0, "{err}");
        let job: i64 = out.trim().parse().unwrap();
        assert_eq!(err, format!("schedule \"crudforge.prune_jobs\": job {job} queued\n"));
        let (_, out, _) = run(&cli, &["jobs", "list", "--state", "queued"], "").await;
        assert!(out.lines().any(|l| l.starts_with(&format!("{job}\tcrudforge.prune_jobs\tqueued\t"))), "{out}");
        assert_eq!(run(&cli, &["jobs", "run"], "").await.0, 0);
        let (_, out, _) = run(&cli, &["jobs", "list", "--state", "done"], "").await;
        assert!(out.lines().any(|l| l.starts_with(&format!("{job}\tcrudforge.prune_jobs\tdone\t"))), "{out}");
        one_error_line(&run(&cli, &["jobs", "run-schedule", "crudforge.nothing"], "").await, 1, "crudforge.nothing");
    }

    async fn create_user_with_the_password_on_stdin_then_login(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        let (status, out, err) = run(&cli, &["create-user", "--email", "Root@Example.com", "--password-stdin", "--superadmin"], "root secret\n").await;
        assert_eq!(status, 0, "{err}");
        let id: Uuid = out.strip_suffix('\n').unwrap().parse().unwrap();
        let user = crudforge::auth::load_user(&db, id).await.unwrap().unwrap();
        assert!(user.is_superadmin(), "{:?}", user.roles);
        assert!(user.roles.iter().all(|r| r.domain_id.is_none()));
        let api = build(config.clone(), db.clone()).unwrap();
        assert_eq!(login(&api, "root@example.com", "root secret").await, 200);
        assert_eq!(login(&api, "root@example.com", "root secret\n").await, 401, "the line ending is not part of it");
        // --admin, --disabled: a disabled account cannot log in.
        let (status, out, _) = run(&cli, &["create-user", "--email", "off@example.com", "--password-stdin", "--admin", "--disabled"], "off secret\r\n").await;
        assert_eq!(status, 0);
        let off = crudforge::auth::load_user(&db, out.trim().parse().unwrap()).await.unwrap().unwrap();
        assert!(!off.is_enabled && off.is_admin() && !off.is_superadmin());
        assert_eq!(login(&api, "off@example.com", "off secret").await, 401);
        // A token (API key) for the user, its value from stdin.
        let key = "k".repeat(40);
        let (status, out, err) = run(&cli, &["create-token", "--email", "root@example.com", "--token-stdin", "--description", "ci"], &format!("{key}\n")).await;
        assert_eq!((status, out.as_str()), (0, ""), "{err}");
        assert_eq!(crudforge::users::token_owner(&db, crudforge::users::TokenRecord::ApiKey, &key).await.unwrap(), Some(id));
        one_error_line(&run(&cli, &["create-token", "--email", "ghost@example.com", "--token-stdin"], &format!("{key}\n")).await, 1, "no user with e-mail ghost@example.com");
    }

    async fn a_password_is_never_taken_from_the_command_line(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        for args in [
            &["create-user", "--email", "a@example.com", "--password", "long enough"][..],
            &["create-user", "--email", "a@example.com", "--password-stdin", "--password", "long enough"],
            &["create-user", "--email", "a@example.com", "--password"],
        ] {
            one_error_line(&run(&cli, args, "from stdin ok\n").await, 1, "--password is refused");
        }
        one_error_line(&run(&cli, &["create-user", "--email", "a@example.com"], "").await, 1, "--password-stdin");
        // A value given to --password-stdin is a command-line error that never repeats it.
        for args in [
            &["create-user", "--email", "a@example.com", "--password-stdin=hunter2-secret"][..],
            &["create-user", "--email", "a@example.com", "--password-stdin", "hunter2-secret"],
        ] {
            let (status, out, err) = run(&cli, args, "from stdin ok\n").await;
            assert_eq!((status, out.as_str()), (2, ""), "{args:?}: {err}");
            assert!(err.contains("--password-stdin takes no value"), "{args:?}: {err}");
            assert!(!err.contains("hunter2"), "the value is not echoed: {err}");
        }
        assert_eq!(users(&db).await, 0, "no user was created");
    }

    async fn a_token_is_never_taken_from_the_command_line(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        assert_eq!(run(&cli, &["create-user", "--email", "a@example.com", "--password-stdin"], "long enough\n").await.0, 0);
        let key = "k".repeat(40);
        let stdin = format!("{}\n", "s".repeat(40));
        let joined = format!("--token={key}");
        for args in [
            &["create-token", "--email", "a@example.com", "--token", key.as_str()][..],
            &["create-token", "--email", "a@example.com", joined.as_str()],
            &["create-token", "--email", "a@example.com", "--token-stdin", "--token", key.as_str()],
            &["create-token", "--email", "a@example.com", "--token"],
        ] {
            one_error_line(&run(&cli, args, &stdin).await, 1, "--token is refused");
        }
        one_error_line(&run(&cli, &["create-token", "--email", "a@example.com"], "").await, 1, "--token-stdin");
        let given = format!("--token-stdin={key}");
        for args in [
            &["create-token", "--email", "a@example.com", given.as_str()][..],
            &["create-token", "--email", "a@example.com", "--token-stdin", key.as_str()],
        ] {
            let (status, out, err) = run(&cli, args, &stdin).await;
            assert_eq!((status, out.as_str()), (2, ""), "{err}");
            assert!(err.contains("--token-stdin takes no value") && !err.contains(&key), "{err}");
        }
        assert_eq!(crudforge::users::token_owner(&db, crudforge::users::TokenRecord::ApiKey, &key).await.unwrap(), None, "the value on the command line was not stored");
        assert_eq!(crudforge::users::token_owner(&db, crudforge::users::TokenRecord::ApiKey, &"s".repeat(40)).await.unwrap(), None, "nor the one on stdin");
    }

    async fn bad_input_is_one_error_line_and_changes_nothing(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        one_error_line(&run(&cli, &["create-user", "--email", "not-an-email", "--password-stdin"], "long enough\n").await, 1, "email");
        one_error_line(&run(&cli, &["create-user", "--email", "a@example.com", "--password-stdin"], "short\n").await, 1, "at least 8 characters");
        one_error_line(&run(&cli, &["create-user", "--email", "a@example.com", "--password-stdin"], "").await, 1, "password");
        // The application's hook fails after the user's row is written: nothing is kept.
        one_error_line(&run(&cli, &["create-user", "--email", "a@example.com", "--password-stdin", "--refuse"], "long enough\n").await, 1, "the hook said no");
        assert_eq!(users(&db).await, 0);
        assert_eq!(run(&cli, &["create-user", "--email", "a@example.com", "--password-stdin"], "long enough\n").await.0, 0);
        one_error_line(&run(&cli, &["create-user", "--email", "A@EXAMPLE.com", "--password-stdin"], "long enough\n").await, 1, "a user with e-mail A@EXAMPLE.com already exists");
        assert_eq!(users(&db).await, 1);
        // Malformed command lines: clap's message on one line, status 2.
        one_error_line(&run(&cli, &["make-coffee"], "").await, 2, "make-coffee");
        one_error_line(&run(&cli, &["create-user"], "").await, 2, "--email");
        let (status, out, err) = run(&cli, &["schema"], "").await;
        assert_eq!((status, out.as_str()), (2, ""));
        assert!(err.contains("check"), "the subcommands are listed: {err}");
        one_error_line(&run(&cli, &["schema", "fix"], "").await, 2, "fix");
        one_error_line(&run(&cli, &["extra", "count-users", "--plus", "many"], "").await, 2, "");
        one_error_line(&run(&cli, &["count-users", "--plus", "many"], "").await, 2, "many");
        // A configuration the library refuses: one line too.
        let broken = App::new("notes-app", build).config(config.clone().with(|c| c.db.database_uri = Some("mysql://x".into())));
        let mut console = Console::captured("");
        assert_eq!(broken.run(["notes-app", "migrate"], &mut console).await, 1);
        assert_eq!(console.errors().lines().count(), 1, "{}", console.errors());
    }

    async fn schema_check_exits_0_when_all_agree_and_1_with_a_line_per_difference(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        let (status, out, err) = run(&cli, &["schema", "check"], "").await;
        assert_eq!((status, out.as_str(), err.as_str()), (0, "", ""));
        execute(&db, "ALTER TABLE cli_notes DROP COLUMN body; DROP INDEX cli_notes_title_idx;").await;
        let (status, out, err) = run(&cli, &["schema", "check"], "").await;
        assert_eq!(status, 1, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines.contains(&"cli_notes.body: missing"), "{out}");
        assert!(lines.contains(&"cli_notes(title): index missing"), "{out}");
        assert_eq!(err, "error: 2 difference(s) between the database and the resources\n");
    }

    async fn print_indexes_migrate_help_and_the_applications_own_commands(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        let (status, out, _) = run(&cli, &["print-indexes"], "").await;
        assert_eq!(status, 0);
        assert!(out.lines().any(|l| l.starts_with("CREATE INDEX") && l.contains("cli_notes (title")), "{out}");
        let (status, out, _) = run(&cli, &["print-indexes", "--down"], "").await;
        assert_eq!(status, 0);
        assert!(out.lines().all(|l| l.starts_with("DROP INDEX")), "{out}");
        let (status, out, err) = run(&cli, &["migrate"], "").await;
        assert_eq!((status, out.as_str(), err.as_str()), (0, "", "migrations are up to date\n"));
        let (status, out, _) = run(&cli, &["--help"], "").await;
        assert_eq!(status, 0);
        for command in ["serve", "migrate", "schema", "create-user", "create-token", "grant-role", "revoke-role", "print-indexes", "count-users"] {
            assert!(out.contains(command), "{command} in {out}");
        }
        let (status, out, _) = run(&cli, &["create-user", "--help"], "").await;
        assert_eq!(status, 0);
        assert!(out.contains("--superadmin") && out.contains("--refuse") && out.contains("--password-stdin"), "{out}");
        assert!(!out.contains("--password <"), "the refused option is not offered: {out}");
        assert_eq!(run(&cli, &["--version"], "").await.1, "notes-app 1.2.3\n");
        let (status, out, err) = run(&cli, &["count-users", "--plus", "2"], "").await;
        assert_eq!((status, out.as_str()), (0, "2\n"), "{err}");
        drop(db);
    }

    async fn grant_role_and_revoke_role_apply_at_once_and_end_no_session(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        assert_eq!(run(&cli, &["create-user", "--email", "alice@example.com", "--password-stdin"], "alice secret\n").await.0, 0);
        let north = domain(&db, "north").await;
        let api = build(config.clone(), db.clone()).unwrap();
        let service = test::init_service(api.app()).await;
        let req = test::TestRequest::post().uri("/api/users/login/").set_json(json!({"email": "alice@example.com", "password": "alice secret"}));
        let tokens: Value = test::call_and_read_body_json(&service, req.to_request()).await;
        let access = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
        let me = || test::TestRequest::get().uri("/api/users/me/").insert_header(("authorization", access.clone())).to_request();
        let roles = |v: Value| v["roles"].clone();
        assert_eq!(roles(test::call_and_read_body_json(&service, me()).await), json!([]));

        // Granted in every domain, in a domain by name and by id; the address in any case.
        done(&run(&cli, &["grant-role", "--email", "ALICE@Example.com", "--role", "ADMIN"], "").await, "granted ADMIN to ALICE@Example.com in every domain");
        done(&run(&cli, &["grant-role", "--email", "alice@example.com", "--role", "MODERATOR", "--domain", "north"], "").await, &format!("granted MODERATOR to alice@example.com in domain north ({north})"));
        done(&run(&cli, &["grant-role", "--email", "alice@example.com", "--role", "USER", "--domain", &north.to_string()], "").await, &format!("granted USER to alice@example.com in domain north ({north})"));
        // The same access token sees them at once: roles are read on every request.
        assert_eq!(roles(test::call_and_read_body_json(&service, me()).await), json!([
            {"role": "ADMIN", "domain_id": null},
            {"role": "MODERATOR", "domain_id": north},
            {"role": "USER", "domain_id": north},
        ]));
        // A grant already held: said, and nothing written.
        done(&run(&cli, &["grant-role", "--email", "alice@example.com", "--role", "ADMIN"], "").await, "alice@example.com already holds ADMIN in every domain; nothing changed");
        assert_eq!(grants(&db).await, 3);

        // Revoked where it is held; a grant not held is an error that changes nothing.
        done(&run(&cli, &["revoke-role", "--email", "alice@example.com", "--role", "MODERATOR", "--domain", "north"], "").await, &format!("revoked MODERATOR from alice@example.com in domain north ({north})"));
        one_error_line(&run(&cli, &["revoke-role", "--email", "alice@example.com", "--role", "MODERATOR", "--domain", "north"], "").await, 1, "alice@example.com does not hold MODERATOR in domain north");
        // Without --domain, only the unscoped grant is meant: USER in north stays.
        one_error_line(&run(&cli, &["revoke-role", "--email", "alice@example.com", "--role", "USER"], "").await, 1, "does not hold USER in every domain (unscoped grants only");
        done(&run(&cli, &["revoke-role", "--email", "alice@example.com", "--role", "ADMIN"], "").await, "revoked ADMIN from alice@example.com in every domain");
        assert_eq!(roles(test::call_and_read_body_json(&service, me()).await), json!([{"role": "USER", "domain_id": north}]));
        assert_eq!(grants(&db).await, 1);

        // No session ended: the access token still works (above), and so does the refresh token.
        let req = test::TestRequest::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": tokens["refresh_token"]}));
        assert_eq!(test::call_service(&service, req.to_request()).await.status(), 200);
    }

    async fn grant_role_and_revoke_role_refuse_unknown_users_domains_and_roles(t) {
        let (config, db) = setup(&t).await;
        let cli = app(&config);
        let (status, out, _) = run(&cli, &["create-user", "--email", "alice@example.com", "--password-stdin"], "alice secret\n").await;
        assert_eq!(status, 0);
        let alice: Uuid = out.trim().parse().unwrap();
        let north = domain(&db, "north").await;
        for command in ["grant-role", "revoke-role"] {
            one_error_line(&run(&cli, &[command, "--email", "ghost@example.com", "--role", "ADMIN"], "").await, 1, "no user with e-mail ghost@example.com");
            one_error_line(&run(&cli, &[command, "--email", "alice@example.com", "--role", "ADMIN", "--domain", "south"], "").await, 1, "no domain with id or name south");
            let unknown = Uuid::new_v4().to_string();
            one_error_line(&run(&cli, &[command, "--email", "alice@example.com", "--role", "ADMIN", "--domain", &unknown], "").await, 1, &format!("no domain with id or name {unknown}"));
            // The application's role set (here DEFAULT_ROLES): names are exact.
            for role in ["OWNER", "admin", ""] {
                one_error_line(&run(&cli, &[command, "--email", "alice@example.com", "--role", role], "").await, 1, &format!("role {role} is not one of SUPERADMIN, ADMIN, MODERATOR, USER"));
            }
            one_error_line(&run(&cli, &[command, "--email", "alice@example.com"], "").await, 2, "--role");
        }
        assert_eq!(grants(&db).await, 0, "nothing was written");
        // An application's own set: its names, and only them.
        let own = app(&config).roles(&["OWNER", "EDITOR"]);
        done(&run(&own, &["grant-role", "--email", "alice@example.com", "--role", "OWNER", "--domain", "north"], "").await, &format!("granted OWNER to alice@example.com in domain north ({north})"));
        one_error_line(&run(&own, &["grant-role", "--email", "alice@example.com", "--role", "ADMIN"], "").await, 1, "role ADMIN is not one of OWNER, EDITOR");
        assert_eq!(grants(&db).await, 1);
        // SUPERADMIN too: the operator acts with a SUPERADMIN's authority.
        assert_eq!(run(&cli, &["grant-role", "--email", "alice@example.com", "--role", "SUPERADMIN"], "").await.0, 0);
        let user = crudforge::auth::load_user(&db, alice).await.unwrap().unwrap();
        assert!(user.is_superadmin(), "{:?}", user.roles);
    }
}
