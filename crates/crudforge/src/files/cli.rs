//! `<app> files gc` (the `files` feature): the stored files no row holds, listed or removed.

use crate::cli::{open_and_migrate, BoxError, Console, Shared};
use crate::config::Config;
use clap::Subcommand;

/// The subcommands of `files`.
#[derive(Debug, Subcommand)]
pub(crate) enum FilesCommand {
    /// Remove the stored files that no row holds (left by a crash mid-upload, or by rows
    /// removed outside the API): prints one `table/id (bytes)` line each, then a total.
    Gc {
        /// List them without removing anything.
        #[arg(long)]
        dry_run: bool,
        /// Leave files younger than this many seconds (an upload whose row is being written).
        #[arg(long, default_value_t = 3600)]
        older_than: u64,
    },
}

/// Runs a `files` subcommand.
pub(crate) async fn run(
    shared: &Shared,
    config: Config,
    command: FilesCommand,
    console: &mut Console,
) -> Result<(), BoxError> {
    let FilesCommand::Gc {
        dry_run,
        older_than,
    } = command;
    let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
    let api = (shared.build)(config, db)?;
    let orphans = api
        .sweep_files(std::time::Duration::from_secs(older_than), dry_run)
        .await?;
    for f in &orphans {
        console.println(&format!("{}/{} ({} bytes)", f.table, f.id, f.size));
    }
    let bytes: u64 = orphans.iter().map(|f| f.size).sum();
    let verb = if dry_run { "would remove" } else { "removed" };
    console.eprintln(&format!(
        "{verb} {} orphaned file(s), {bytes} bytes",
        orphans.len()
    ));
    Ok(())
}
