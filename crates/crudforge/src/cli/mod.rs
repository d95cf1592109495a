//! The command line every application gets: `serve`, `migrate`, `make-migrations`,
//! `schema check`, `create-user`, `create-token`, `grant-role`, `revoke-role` and
//! `print-indexes`, with the application's own subcommands beside them.
//!
//! An application's `main` gives the function that builds its [`Api`], its migrations and,
//! optionally, its own commands (see [cli.md](https://github.com/crudforge/crudforge/blob/main/docs/cli.md)):
//!
//! ```no_run
//! use crudforge::cli::{App, BoxError};
//! use crudforge::users::UserBlueprint;
//! use crudforge::{Api, Config, Database};
//!
//! fn build(config: Config, db: Database) -> Result<Api, BoxError> {
//!     Ok(Api::new(config, db)?.mount(UserBlueprint::default())?)
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     App::new("my-app", build).version(env!("CARGO_PKG_VERSION")).main()
//! }
//! ```
//!
//! | Module | Owns |
//! |---|---|
//! | `console` | where commands read secrets from and print to: the process's streams, or memory |
//! | `database` | `.env`, opening and migrating, connection errors without credentials |
//! | `serve` | the `serve` command: readiness, migrations, schema check, graceful stop |
//! | `schema` | `schema check`, `make-migrations` and `print-indexes` |
//! | `accounts` | `create-user`, `create-token` and where their secrets come from |
//! | `roles` | `grant-role` and `revoke-role`, with the operator's (a SUPERADMIN's) authority |
//! | `journal` | what those commands' writes tell the mounted blueprints' parts that record writes (a feed) |
//! | `files` | `files gc` (`files`) |

mod accounts;
mod console;
mod database;
mod journal;
mod roles;
mod schema;
mod serve;

pub use console::Console;
pub(crate) use database::{load_dotenv, open_and_migrate};

use crate::api::Api;
use crate::config::Config;
use crate::db::{AppMigrations, Conn, Database};
use crate::users::{Role, DEFAULT_ROLES};
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use futures_util::future::LocalBoxFuture;
use std::cell::RefCell;
use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use uuid::Uuid;

/// The error of a command: its message becomes the one `error: ...` line on stderr.
pub type BoxError = Box<dyn std::error::Error>;

/// The application's part of `create-user`: runs inside the transaction that creates the
/// user (with the new user's id and the application's own options), so that whatever it
/// writes is kept or dropped with the account.
pub(crate) type UserHook<U> =
    dyn for<'a> Fn(&'a mut Conn, Uuid, U) -> LocalBoxFuture<'a, Result<(), crate::Error>>;

/// The handler of the application's own subcommands.
type CommandFn<C> = dyn Fn(C, Context) -> LocalBoxFuture<'static, Result<(), BoxError>>;

/// What the commands need of the application: how to build its [`Api`] and its migrations.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) build: Rc<dyn Fn(Config, Database) -> Result<Api, BoxError>>,
    migrations: Option<fn() -> AppMigrations>,
    /// The role names `grant-role` and `revoke-role` accept.
    roles: &'static [&'static str],
}

impl Shared {
    pub(crate) fn migrations(&self) -> Option<AppMigrations> {
        self.migrations.map(|m| m())
    }
}

/// An application's command line: the library's commands, the application's own
/// subcommands (`C`, a clap [`Subcommand`]) and the application's own options of
/// `create-user` (`U`, clap [`Args`]).
pub struct App<C = NoCommands, U = NoUserArgs> {
    name: &'static str,
    about: Option<String>,
    version: Option<&'static str>,
    config: Option<Config>,
    shared: Shared,
    commands: Option<Rc<CommandFn<C>>>,
    user_hook: Option<Rc<UserHook<U>>>,
}

impl<C, U> std::fmt::Debug for App<C, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// No subcommands of the application's own (the default of [`App`]).
#[derive(Debug, Clone, Copy)]
pub enum NoCommands {}

impl FromArgMatches for NoCommands {
    fn from_arg_matches(_: &ArgMatches) -> Result<Self, clap::Error> {
        Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))
    }
    fn update_from_arg_matches(&mut self, _: &ArgMatches) -> Result<(), clap::Error> {
        match *self {}
    }
}

impl Subcommand for NoCommands {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        cmd
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        cmd
    }
    fn has_subcommand(_: &str) -> bool {
        false
    }
}

/// No options of the application's own on `create-user` (the default of [`App`]).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct NoUserArgs {}

/// The command line as parsed.
#[derive(Debug, Parser)]
struct Cli<C: Subcommand, U: Args> {
    /// What to do (default: serve).
    #[command(subcommand)]
    command: Option<Command<C, U>>,
}

/// The library's commands, and the application's beside them.
#[derive(Debug, Subcommand)]
enum Command<C: Subcommand, U: Args> {
    /// Run pending migrations, then serve HTTP (the default).
    Serve {
        /// Address to listen on (also BIND).
        #[arg(long, env = "BIND", default_value = "127.0.0.1:8080")]
        bind: String,
    },
    /// Run pending migrations and exit.
    Migrate,
    /// Write the next migration, for both backends, from the model-first resources: new
    /// tables, added columns and indexes; prints what it wrote, and what it left for you to
    /// review. Touches no database.
    MakeMigrations {
        /// The migration's name: lower-case letters, digits and `_` (e.g. `add_loans`).
        name: String,
        /// The migrations folder, holding `sqlite/` and `postgres/`.
        #[arg(long, default_value = "migrations")]
        dir: PathBuf,
    },
    /// Compare the database with the mounted resources.
    Schema {
        /// Which check.
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Create a user; prints its id.
    CreateUser(CreateUser<U>),
    /// Store a token (API key) for a user.
    CreateToken(CreateToken),
    /// Grant a role to a user, in every domain or in one; with a SUPERADMIN's authority.
    GrantRole(RoleArgs),
    /// Revoke a role of a user, in every domain (its unscoped grant) or in one.
    RevokeRole(RoleArgs),
    /// Print the `CREATE INDEX` statement of every index the mounted resources declare
    /// (`#[resource(index(...))]`), one a line, for a migration's `up.sql`. Touches no
    /// database.
    PrintIndexes {
        /// Print the `DROP INDEX` statements instead, for `down.sql`.
        #[arg(long)]
        down: bool,
    },
    /// The optional surfaces' commands (`files`, `export`, `import`), as the crate root lists
    /// them.
    #[command(flatten)]
    Surface(crate::SurfaceCommand),
    /// The application's own commands.
    #[command(flatten)]
    App(C),
}

/// The subcommands of `schema`.
#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Compare the database with the mounted resources without migrating it: prints one
    /// `table.column: what differs` line per difference; exits 1 when there is one.
    Check,
}

/// `create-user`.
#[derive(Debug, Args)]
struct CreateUser<U: Args> {
    /// E-mail address.
    #[arg(long)]
    email: String,
    /// Read the password from the first line of standard input (without it, the password
    /// comes from the CRUDFORGE_PASSWORD environment variable).
    #[arg(long)]
    password_stdin: bool,
    /// Refused: a password on the command line is visible to every local user.
    #[arg(long, hide = true, num_args = 0..=1)]
    password: Option<Option<String>>,
    /// Grant the ADMIN role (in every domain).
    #[arg(long)]
    admin: bool,
    /// Grant the SUPERADMIN role (the only one that grants SUPERADMIN or unscoped ADMIN).
    #[arg(long)]
    superadmin: bool,
    /// Create the account disabled.
    #[arg(long)]
    disabled: bool,
    /// The application's own options.
    #[command(flatten)]
    extra: U,
}

/// `create-token`.
#[derive(Debug, Args)]
struct CreateToken {
    /// The user's e-mail address.
    #[arg(long)]
    email: String,
    /// Read the token value, at least 32 characters, from the first line of standard input
    /// (without it, the value comes from the CRUDFORGE_TOKEN environment variable).
    #[arg(long)]
    token_stdin: bool,
    /// Refused: a token on the command line is visible to every local user.
    #[arg(long, hide = true, num_args = 0..=1)]
    token: Option<Option<String>>,
    /// What the token is for.
    #[arg(long)]
    description: Option<String>,
}

/// `grant-role` and `revoke-role`.
#[derive(Debug, Args)]
struct RoleArgs {
    /// The user's e-mail address.
    #[arg(long)]
    email: String,
    /// The role name, one of the application's set (by default SUPERADMIN, ADMIN, MODERATOR,
    /// USER).
    #[arg(long)]
    role: String,
    /// The domain, by id or name (without it: every domain, an unscoped grant).
    #[arg(long)]
    domain: Option<String>,
}

/// What an application's own command gets: the configuration, the database (opened and
/// migrated on demand), its [`Api`], and a way to print.
#[derive(Clone)]
pub struct Context {
    config: Config,
    shared: Shared,
    out: Rc<RefCell<Vec<String>>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl Context {
    /// The configuration, read from the environment (or the one given to [`App::config`]).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Opens the database and runs pending migrations, the library's and the application's.
    ///
    /// # Errors
    ///
    /// Bad configuration, an unreachable database, or a failed migration.
    pub async fn database(&self) -> Result<Database, BoxError> {
        open_and_migrate(&self.config, self.shared.migrations())
            .await
            .map(|(db, _)| db)
    }

    /// The application's [`Api`] over `db`, built by the function given to [`App::new`].
    ///
    /// # Errors
    ///
    /// Whatever that function returns.
    pub fn api(&self, db: Database) -> Result<Api, BoxError> {
        (self.shared.build)(self.config.clone(), db)
    }

    /// Prints one line on standard output.
    pub fn println(&self, line: impl std::fmt::Display) {
        self.out.borrow_mut().push(line.to_string());
    }
}

impl App {
    /// The command line of the application called `name` (its binary's name, shown by
    /// `--help`), whose [`Api`] `build` makes from the configuration and the database.
    pub fn new<F, E>(name: &'static str, build: F) -> App
    where
        F: Fn(Config, Database) -> Result<Api, E> + 'static,
        E: Into<BoxError>,
    {
        App {
            name,
            about: None,
            version: None,
            config: None,
            shared: Shared {
                build: Rc::new(move |c, d| build(c, d).map_err(Into::into)),
                migrations: None,
                roles: DEFAULT_ROLES,
            },
            commands: None,
            user_hook: None,
        }
    }
}

impl<C: Subcommand + 'static, U: Args + 'static> App<C, U> {
    /// The one-line description `--help` shows.
    #[must_use]
    pub fn about(mut self, about: &str) -> Self {
        self.about = Some(about.to_owned());
        self
    }

    /// The version `--version` prints (usually `env!("CARGO_PKG_VERSION")`).
    #[must_use]
    pub fn version(mut self, version: &'static str) -> Self {
        self.version = Some(version);
        self
    }

    /// The application's own migrations, run after the library's by every command that
    /// migrates (`serve`, `migrate`, `create-user`, `create-token`, `grant-role`, `revoke-role`,
    /// [`Context::database`]).
    /// A function, because embedded migrations are consumed when they run.
    #[must_use]
    pub fn migrations(mut self, migrations: fn() -> AppMigrations) -> Self {
        self.shared.migrations = Some(migrations);
        self
    }

    /// The role names `grant-role` and `revoke-role` accept (default
    /// [`DEFAULT_ROLES`]): give the same set as to
    /// [`guard_roles`](crate::users::guard_roles), so that the command line grants what the
    /// role endpoints would.
    #[must_use]
    pub fn roles(mut self, roles: &'static [&'static str]) -> Self {
        self.shared.roles = roles;
        self
    }

    /// Uses `config` instead of reading the configuration from the environment (tests, or an
    /// application that builds its configuration in code).
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Adds the application's own subcommands `C2` (a clap [`Subcommand`] enum), run by
    /// `handler` with a [`Context`].
    #[must_use]
    pub fn commands<C2, F, Fut>(self, handler: F) -> App<C2, U>
    where
        C2: Subcommand + 'static,
        F: Fn(C2, Context) -> Fut + 'static,
        Fut: Future<Output = Result<(), BoxError>> + 'static,
    {
        App {
            name: self.name,
            about: self.about,
            version: self.version,
            config: self.config,
            shared: self.shared,
            commands: Some(Rc::new(move |c, ctx| Box::pin(handler(c, ctx)))),
            user_hook: self.user_hook,
        }
    }

    /// Adds the application's own options `U2` (clap [`Args`]) to `create-user`; `hook`
    /// receives them with the new user's id inside the transaction that creates the user
    /// (profile columns of the application's user model, for example).
    #[must_use]
    pub fn create_user_args<U2, F>(self, hook: F) -> App<C, U2>
    where
        U2: Args + 'static,
        F: for<'a> Fn(&'a mut Conn, Uuid, U2) -> LocalBoxFuture<'a, Result<(), crate::Error>>
            + 'static,
    {
        App {
            name: self.name,
            about: self.about,
            version: self.version,
            config: self.config,
            shared: self.shared,
            commands: self.commands,
            user_hook: Some(Rc::new(hook)),
        }
    }

    /// Runs the command line of the process: loads `.env` from the working directory (never
    /// from its parents), starts logging (`LOG_FORMAT`, `RUST_LOG`), runs the command and
    /// returns its exit status (see [`App::run`]).
    pub fn main(self) -> ExitCode {
        if let Err(e) = load_dotenv(Path::new("")) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        // A bad configuration is reported by the command; logs fall back to text meanwhile.
        let format = Config::from_env()
            .map(|c| c.ops.log_format)
            .unwrap_or_default();
        let _ = crate::logging::init(format);
        let mut console = Console::std();
        let status =
            actix_web::rt::System::new().block_on(self.run(std::env::args_os(), &mut console));
        crate::logging::flush();
        ExitCode::from(status)
    }

    /// Runs one command line (`args`, the program's name first) on `console`; returns the
    /// exit status: 0 on success, 1 when the command failed (one `error: ...` line on
    /// stderr; for `schema check`, when the database differs from the resources), 2 for a
    /// malformed command line (clap's message on one line) or a missing subcommand (its help
    /// on stderr). `--help` and `--version` print on stdout and return 0.
    pub async fn run<I, T>(&self, args: I, console: &mut Console) -> u8
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let cli = match self.parse(args.iter().cloned()) {
            Ok(cli) => cli,
            // clap's message would repeat the value given to a flag that reads a secret from
            // standard input (`--password-stdin=hunter2`).
            Err(e) => match secret_on_argv(&args) {
                Some(flag) => {
                    console.eprintln(&format!(
                        "error: {flag} takes no value: give it on standard input \
                         (the value given is not shown)"
                    ));
                    return 2;
                }
                None => return usage(&e, console),
            },
        };
        match self.dispatch(cli, console).await {
            Ok(()) => 0,
            Err(e) => {
                let line = e.to_string().replace('\n', " ");
                console.eprintln(&format!("error: {line}"));
                1
            }
        }
    }

    fn parse<I, T>(&self, args: I) -> Result<Cli<C, U>, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut cmd = Cli::<C, U>::command().name(self.name).bin_name(self.name);
        if let Some(about) = &self.about {
            cmd = cmd.about(about.clone());
        }
        if let Some(version) = &self.version {
            cmd = cmd.version(*version);
        }
        let matches = cmd.try_get_matches_from(args)?;
        Cli::<C, U>::from_arg_matches(&matches)
    }

    async fn dispatch(&self, cli: Cli<C, U>, console: &mut Console) -> Result<(), BoxError> {
        let config = match &self.config {
            Some(c) => c.clone(),
            None => Config::from_env()?,
        };
        let command = match cli.command {
            Some(c) => c,
            None => Command::Serve {
                bind: std::env::var("BIND").unwrap_or_else(|_| "127.0.0.1:8080".to_owned()),
            },
        };
        let shared = &self.shared;
        match command {
            Command::Serve { bind } => serve::serve(shared, config, &bind).await,
            Command::Migrate => {
                let (_, applied) = open_and_migrate(&config, shared.migrations()).await?;
                match applied.len() {
                    0 => console.eprintln("migrations are up to date"),
                    n => console.eprintln(&format!("applied {n} migration(s)")),
                }
                Ok(())
            }
            Command::Schema {
                command: SchemaCommand::Check,
            } => {
                let drifts = schema::schema_drift(shared, config).await?;
                for line in &drifts {
                    console.println(line);
                }
                match drifts.len() {
                    0 => Ok(()),
                    n => Err(
                        format!("{n} difference(s) between the database and the resources").into(),
                    ),
                }
            }
            Command::MakeMigrations { name, dir } => {
                let report = schema::make_migrations(shared, config, &dir, &name).await?;
                for line in report.to_string().lines() {
                    console.println(line);
                }
                Ok(())
            }
            Command::Surface(command) => command.run(shared, config, console).await,
            Command::PrintIndexes { down } => {
                for line in schema::index_statements(shared, config, down).await? {
                    console.println(&line);
                }
                Ok(())
            }
            Command::CreateUser(args) => self.create_user(config, args, console).await,
            Command::CreateToken(args) => {
                let token = accounts::token(console, args.token.is_some(), args.token_stdin)?;
                let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
                accounts::create_token(&db, &args.email, &token, args.description.as_deref()).await
            }
            Command::GrantRole(args) => {
                role_command(shared, config, roles::Kind::Grant, args, console).await
            }
            Command::RevokeRole(args) => {
                role_command(shared, config, roles::Kind::Revoke, args, console).await
            }
            Command::App(c) => {
                let Some(handler) = &self.commands else {
                    return Err("this command has no handler".into());
                };
                let out = Rc::new(RefCell::new(Vec::new()));
                let ctx = Context {
                    config,
                    shared: self.shared.clone(),
                    out: Rc::clone(&out),
                };
                let result = handler(c, ctx).await;
                for line in out.borrow().iter() {
                    console.println(line);
                }
                result
            }
        }
    }

    async fn create_user(
        &self,
        config: Config,
        args: CreateUser<U>,
        console: &mut Console,
    ) -> Result<(), BoxError> {
        let password = accounts::password(console, args.password.is_some(), args.password_stdin)?;
        let (db, _) = open_and_migrate(&config, self.shared.migrations()).await?;
        let mut roles = Vec::new();
        roles.extend(args.admin.then_some(Role::Admin));
        roles.extend(args.superadmin.then_some(Role::SuperAdmin));
        let user = accounts::NewUser {
            email: &args.email,
            password: &password,
            enabled: !args.disabled,
            roles,
            extra: args.extra,
        };
        let feeds = journal::Journal::of(&self.shared, &config, &db)?;
        let id =
            accounts::create_user(&db, &config, user, self.user_hook.as_deref(), &feeds).await?;
        console.println(&id.to_string());
        Ok(())
    }
}

/// `grant-role` or `revoke-role`: one line on stderr saying what was done (or that the
/// grant was already held, which changes nothing and succeeds).
async fn role_command(
    shared: &Shared,
    config: Config,
    kind: roles::Kind,
    args: RoleArgs,
    console: &mut Console,
) -> Result<(), BoxError> {
    let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
    let change = roles::RoleChange {
        email: &args.email,
        role: &args.role,
        domain: args.domain.as_deref(),
    };
    let feeds = journal::Journal::of(shared, &config, &db)?;
    match roles::change_role(&db, shared.roles, kind, change, &feeds).await? {
        roles::Done::Changed(line) | roles::Done::AlreadyHeld(line) => console.eprintln(&line),
    }
    Ok(())
}

/// The flags that read a secret from standard input and take no value themselves.
const SECRET_FLAGS: [&str; 2] = ["--password-stdin", "--token-stdin"];

/// The flag of [`SECRET_FLAGS`] that a command line gives a value to (`--password-stdin=…`,
/// or `--password-stdin …` followed by something that is not an option), if any: a secret
/// typed where it does not belong, which no message may repeat.
fn secret_on_argv(args: &[OsString]) -> Option<&'static str> {
    let mut previous: Option<&'static str> = None;
    for arg in args.iter().skip(1) {
        let text = arg.to_string_lossy();
        if let Some(flag) = previous.take() {
            if !text.starts_with('-') {
                return Some(flag);
            }
        }
        for flag in SECRET_FLAGS {
            if text == flag {
                previous = Some(flag);
            } else if text
                .strip_prefix(flag)
                .is_some_and(|rest| rest.starts_with('='))
            {
                return Some(flag);
            }
        }
    }
    None
}

/// A malformed command line: clap's message on one line (exit 2); a command without its
/// subcommand: its help on stderr (exit 2); `--help` and `--version` on stdout (exit 0).
fn usage(e: &clap::Error, console: &mut Console) -> u8 {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        // `<app> schema`: what the subcommands are, on stderr.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            console.err.write(&text);
            2
        }
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            console.out.write(&text);
            if !text.ends_with('\n') {
                console.out.write("\n");
            }
            0
        }
        _ => {
            // clap's message, without the usage and tips that follow it.
            let message = text.split("\n\n").next().unwrap_or_default();
            let line = message
                .lines()
                .filter(|l| !l.trim_start().starts_with("tip:"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            console.eprintln(&line);
            2
        }
    }
}
