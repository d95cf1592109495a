//! `<app> history verify` (the `history` feature): seals the committed entries, then checks
//! each resource's hash chain and names the first broken link.

use super::chain;
use crate::cli::{open_and_migrate, BoxError, Console, Shared};
use crate::config::Config;
use clap::Subcommand;

/// The subcommands of `history`.
#[derive(Debug, Subcommand)]
pub(crate) enum HistoryCommand {
    /// Check the hash chain of each resource's history (after sealing the entries committed
    /// since the last pass): prints `<table>: <n> entries, intact` per resource, or the first
    /// entry whose link does not hold, and fails when one does not.
    Verify {
        /// Only this resource's table.
        #[arg(long)]
        resource: Option<String>,
    },
}

/// Runs a `history` subcommand.
pub(crate) async fn run(
    shared: &Shared,
    config: Config,
    command: HistoryCommand,
    console: &mut Console,
) -> Result<(), BoxError> {
    let HistoryCommand::Verify { resource } = command;
    let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
    let sealed = chain::seal(&db).await?;
    if sealed > 0 {
        console.eprintln(&format!("sealed {sealed} new entries"));
    }
    let checked = chain::verify(&db, resource.as_deref()).await?;
    let mut broken = 0;
    for c in &checked {
        match &c.broken {
            None if c.waiting > 0 => console.println(&format!(
                "{}: {} entries, intact; {} newer not sealed yet (a transaction older than them is still running)",
                c.resource, c.entries, c.waiting
            )),
            None => console.println(&format!("{}: {} entries, intact", c.resource, c.entries)),
            Some((id, seq, why)) => {
                broken += 1;
                console.println(&format!(
                    "{}: broken at entry {id} (place {seq} in the chain): {why}; {} entries before it hold",
                    c.resource, c.entries
                ));
            }
        }
    }
    if checked.is_empty() {
        console.println("no history entries");
    }
    if broken > 0 {
        return Err(format!("{broken} history chain(s) broken").into());
    }
    Ok(())
}
