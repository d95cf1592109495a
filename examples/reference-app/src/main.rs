//! The crudforge reference application.
//!
//! Run it with `cargo run -p reference-app` (SQLite in `./data`, nothing to configure), or
//! point `ORM_DATABASE_URI` at PostgreSQL. `reference-app --help` lists the commands; see
//! `docs/reference-app.md`.

fn main() -> std::process::ExitCode {
    reference_app::cli::main()
}
