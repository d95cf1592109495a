//! `<app> jobs` (the `jobs` feature): the jobs listed, a failed one retried, a queued one
//! cancelled, the due ones run now, a schedule's job enqueued now.

use super::store::{self, JobState};
use crate::cli::{open_and_migrate, BoxError, Console, Shared};
use crate::config::Config;
use clap::Subcommand;

/// The subcommands of `jobs`.
#[derive(Debug, Subcommand)]
pub(crate) enum JobsCommand {
    /// The newest jobs, one line each: number, kind, state, attempts, when due, last error.
    List {
        /// Only the jobs in this state: queued, running, done, failed or cancelled.
        #[arg(long)]
        state: Option<String>,
        /// How many at most.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Queue a failed or cancelled job again, due now, with its attempts counted afresh.
    Retry {
        /// The job's number.
        id: i64,
    },
    /// Cancel a queued job that no worker has claimed.
    Cancel {
        /// The job's number.
        id: i64,
    },
    /// Run every due job now, in this process, and the schedules' due ticks; prints how many
    /// ran.
    Run,
    /// Enqueue the job of a schedule now, as its ticks do, leaving its ticks as they are;
    /// prints the job's number (a worker, or `jobs run`, runs it).
    RunSchedule {
        /// The schedule's name (the server's own begin with `crudforge.`).
        name: String,
    },
}

/// Runs a `jobs` subcommand.
pub(crate) async fn run(
    shared: &Shared,
    config: Config,
    command: JobsCommand,
    console: &mut Console,
) -> Result<(), BoxError> {
    let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
    match command {
        JobsCommand::List { state, limit } => {
            let state = match state.as_deref() {
                None => None,
                Some(word) => Some(JobState::parse(word).ok_or_else(|| {
                    format!("--state {word:?}: expected queued, running, done, failed or cancelled")
                })?),
            };
            for job in store::list(&db, state, i64::from(limit)).await? {
                let due = chrono::DateTime::from_timestamp_micros(job.run_at)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                    .unwrap_or_default();
                let mut line = format!(
                    "{}\t{}\t{}\t{}/{}\t{due}",
                    job.id, job.kind, job.state, job.attempts, job.max_attempts
                );
                if let Some(error) = &job.last_error {
                    line.push('\t');
                    line.push_str(&error.replace(['\n', '\r', '\t'], " "));
                }
                console.println(&line);
            }
        }
        JobsCommand::Retry { id } => {
            if !store::retry(&db, id).await? {
                return Err(format!("job {id} is not a failed or cancelled job").into());
            }
            console.eprintln(&format!("job {id} queued again"));
        }
        JobsCommand::Cancel { id } => {
            if !store::cancel(&db, id).await? {
                return Err(format!("job {id} is not a queued job").into());
            }
            console.eprintln(&format!("job {id} cancelled"));
        }
        JobsCommand::Run => {
            let api = (shared.build)(config, db)?;
            let ran = api.run_due_jobs().await?;
            console.eprintln(&format!("ran {ran} job(s)"));
        }
        JobsCommand::RunSchedule { name } => {
            let api = (shared.build)(config, db)?;
            let id = api.run_schedule(&name).await?;
            console.println(&id.to_string());
            console.eprintln(&format!("schedule {name:?}: job {id} queued"));
        }
    }
    Ok(())
}
