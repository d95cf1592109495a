//! `<app> export` and `<app> import` (the `export` feature): a resource's rows to a CSV or
//! NDJSON file and back, through the application's own `export/` and `import/` routes with a
//! user's rights, and a progress bar when standard error is a terminal.

use crate::api::Api;
use crate::cli::{open_and_migrate, BoxError, Console, Shared};
use crate::config::Config;
use actix_web::body::MessageBody;
use actix_web::dev::{Payload, Service};
use actix_web::http::header;
use actix_web::test::TestRequest;
use actix_web::web::Bytes;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::pin::Pin;

/// The formats of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FileFormat {
    /// A header row of member names, then one row per item.
    Csv,
    /// One JSON object per line.
    Ndjson,
}

impl FileFormat {
    fn name(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Ndjson => "ndjson",
        }
    }

    fn media_type(self) -> &'static str {
        match self {
            FileFormat::Csv => "text/csv",
            FileFormat::Ndjson => "application/x-ndjson",
        }
    }
}

/// `export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The resource: its path segment (`critters`) or its name (`Critter`).
    resource: String,
    /// The e-mail address of the user whose rights the export has (what it may list and read).
    #[arg(long)]
    user: String,
    /// The file's format.
    #[arg(long, value_enum, default_value = "csv")]
    format: FileFormat,
    /// Write to this file instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Only the rows this filter expression matches (the list's `filter` parameter).
    #[arg(long)]
    filter: Option<String>,
}

/// `import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The resource: its path segment (`critters`) or its name (`Critter`).
    resource: String,
    /// The file to import.
    file: PathBuf,
    /// The e-mail address of the user whose rights the import has (who creates the rows).
    #[arg(long)]
    user: String,
    /// The file's format (default: from its extension, `.csv` or `.ndjson`/`.jsonl`).
    #[arg(long, value_enum)]
    format: Option<FileFormat>,
    /// Write the rows this many at a time, each chunk on its own (without it: all or nothing).
    #[arg(long)]
    chunk_size: Option<u32>,
}

/// The application, built and ready to answer requests, with a token of the user.
struct Session {
    api: Api,
    token: String,
    prefix: String,
}

/// Builds the application, finds the resource's prefix and mints an access token for `email`.
async fn session(
    shared: &Shared,
    config: Config,
    resource: &str,
    email: &str,
    route: &str,
) -> Result<Session, BoxError> {
    let (db, _) = open_and_migrate(&config, shared.migrations()).await?;
    let api = (shared.build)(config, db)?;
    let prefix = prefix_of(&api, resource, route)?;
    let (user, _, enabled) = crate::users::find_by_email(api.db(), email)
        .await?
        .ok_or_else(|| format!("no user with e-mail {email}"))?;
    if !enabled {
        return Err(format!("the user {email} is disabled").into());
    }
    let token = crate::users::access_token(api.state(), user).await?;
    Ok(Session { api, token, prefix })
}

/// The prefix of the mounted resource that offers `route` (`export/` or `import/`) and whose
/// last path segment or name is `resource` (letter case aside), from the API's own
/// description; an error naming those that offer it otherwise.
fn prefix_of(api: &Api, resource: &str, route: &str) -> Result<String, BoxError> {
    let spec: Value = serde_json::from_str(&api.openapi_json())?;
    let mut known = Vec::new();
    let paths = spec.get("paths").and_then(Value::as_object);
    for (path, item) in paths.into_iter().flatten() {
        let Some(prefix) = path.strip_suffix(route) else {
            continue;
        };
        // A nested blueprint needs its parents' ids, which a command does not take.
        if prefix.contains('{') {
            continue;
        }
        let name = item
            .as_object()
            .and_then(|ops| ops.values().next())
            .and_then(|op| op.pointer("/tags/0"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let segment = prefix
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        if segment.eq_ignore_ascii_case(resource) || name.eq_ignore_ascii_case(resource) {
            return Ok(prefix.to_owned());
        }
        known.push(format!("{segment} ({name})"));
    }
    let verb = route.trim_end_matches('/');
    if known.is_empty() {
        return Err(format!("no mounted resource offers {verb}").into());
    }
    known.sort();
    Err(format!(
        "no resource {resource} offers {verb}; those that do: {}",
        known.join(", ")
    )
    .into())
}

/// Whether a progress bar may be drawn: the console is the process's own, and its standard
/// error a terminal.
fn progress_bar(console: &Console, len: Option<u64>) -> ProgressBar {
    if !console.stderr_is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match len {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = match len {
        Some(_) => "{bar:40} {bytes}/{total_bytes} sent",
        None => "{spinner} {pos} rows written",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// Counts the rows of an export as its bytes go by: lines, less the CSV header, and line
/// ends inside quoted CSV cells aside.
struct RowCounter {
    csv: bool,
    quoted: bool,
    lines: u64,
}

impl RowCounter {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'"' if self.csv => self.quoted = !self.quoted,
                b'\n' if !self.quoted => self.lines += 1,
                _ => {}
            }
        }
    }

    fn rows(&self) -> u64 {
        if self.csv {
            self.lines.saturating_sub(1)
        } else {
            self.lines
        }
    }
}

/// Runs `export`: streams the resource's `export/` answer to the output, chunk by chunk;
/// `exported N rows` on stderr.
pub(crate) async fn export(
    shared: &Shared,
    config: Config,
    args: ExportArgs,
    console: &mut Console,
) -> Result<(), BoxError> {
    let s = session(shared, config, &args.resource, &args.user, "export/").await?;
    let mut query = vec![("format", args.format.name().to_owned())];
    if let Some(f) = args.filter {
        query.push(("filter", f));
    }
    let uri = format!(
        "{}export/?{}",
        s.prefix,
        serde_urlencoded::to_string(&query)?
    );
    let app = actix_web::test::init_service(s.api.app()).await;
    let req = TestRequest::get()
        .uri(&uri)
        .insert_header((header::AUTHORIZATION, format!("Bearer {}", s.token)))
        .to_request();
    let resp = app.call(req).await?;
    if !resp.status().is_success() {
        let body = actix_web::body::to_bytes(resp.into_body())
            .await
            .map_err(Into::into)?;
        return Err(refusal(&body, console));
    }
    // Written next to the target and renamed at the end, so that a failed export leaves no
    // half-written file under the name asked for.
    let mut file = match &args.output {
        Some(path) => {
            let part = part_path(path);
            Some((create_part(&part)?, part, path))
        }
        None => None,
    };
    let bar = progress_bar(console, None);
    let mut counter = RowCounter {
        csv: args.format == FileFormat::Csv,
        quoted: false,
        lines: 0,
    };
    let mut body = Box::pin(resp.into_body());
    let outcome: Result<(), BoxError> = async {
        while let Some(chunk) = std::future::poll_fn(|cx| body.as_mut().poll_next(cx)).await {
            let chunk = chunk.map_err(Into::into)?;
            counter.feed(&chunk);
            match &mut file {
                Some((f, _, _)) => f.write_all(&chunk)?,
                None => console.out.write_bytes(&chunk),
            }
            bar.set_position(counter.rows());
        }
        if let Some((f, part, path)) = &mut file {
            f.flush()?;
            std::fs::rename(&part, path)?;
        }
        Ok(())
    }
    .await;
    bar.finish_and_clear();
    if let (Err(_), Some((_, part, _))) = (&outcome, &file) {
        let _ = std::fs::remove_file(part);
    }
    outcome?;
    console.eprintln(&format!("exported {} rows", counter.rows()));
    Ok(())
}

/// Creates the part file `part` new, readable and writable by its owner alone (0600 on Unix):
/// an existing file (a symbolic link planted there, or an earlier export's leftover) is
/// refused, never followed, truncated or removed.
///
/// # Errors
///
/// `part` exists, or cannot be created.
fn create_part(part: &std::path::Path) -> Result<std::fs::File, BoxError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(part).map_err(|e| -> BoxError {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!(
                "{} exists already (an earlier export's leftover?); remove it and export again",
                part.display()
            )
            .into()
        } else {
            format!("{}: {e}", part.display()).into()
        }
    })
}

/// `<path>.part`, where an export is written before it is complete.
fn part_path(path: &std::path::Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

/// Runs `import`: streams the file to the resource's `import/`; `imported N rows` on stderr,
/// or every refused line and member and an error.
pub(crate) async fn import(
    shared: &Shared,
    config: Config,
    args: ImportArgs,
    console: &mut Console,
) -> Result<(), BoxError> {
    let format = match args.format {
        Some(f) => f,
        None => match args
            .file
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("csv") => FileFormat::Csv,
            Some("ndjson" | "jsonl") => FileFormat::Ndjson,
            _ => {
                return Err(
                    "give --format csv or ndjson: the file's extension names neither".into(),
                )
            }
        },
    };
    let file = std::fs::File::open(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    let len = file.metadata()?.len();
    let s = session(shared, config, &args.resource, &args.user, "import/").await?;
    let uri = match args.chunk_size {
        Some(n) => format!("{}import/?mode=chunked&chunk_size={n}", s.prefix),
        None => format!("{}import/", s.prefix),
    };
    let bar = progress_bar(console, Some(len));
    let req = TestRequest::post()
        .uri(&uri)
        .insert_header((header::AUTHORIZATION, format!("Bearer {}", s.token)))
        .insert_header((header::CONTENT_TYPE, format.media_type()))
        .insert_header((header::CONTENT_LENGTH, len))
        .to_request();
    let (req, _) = req.replace_payload(file_payload(file, bar.clone()));
    let app = actix_web::test::init_service(s.api.app()).await;
    let resp = app.call(req).await;
    bar.finish_and_clear();
    let resp = resp?;
    let status = resp.status();
    let body = actix_web::body::to_bytes(resp.into_body())
        .await
        .map_err(Into::into)?;
    if !status.is_success() {
        return Err(refusal(&body, console));
    }
    let answer: Value = serde_json::from_slice(&body)?;
    let created = answer.get("created").and_then(Value::as_u64).unwrap_or(0);
    let failed: u64 = answer
        .get("failed")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|c| c.get("rows").and_then(Value::as_u64))
                .sum()
        })
        .unwrap_or(0);
    print_errors(&answer, console);
    console.eprintln(&format!("imported {created} rows"));
    if failed > 0 {
        return Err(format!("{failed} rows refused (their chunks were not written)").into());
    }
    Ok(())
}

/// The file as a request body, read 64 KiB at a time, the bar moving with what is read.
fn file_payload(file: std::fs::File, bar: ProgressBar) -> Payload {
    let stream = futures_util::stream::unfold(Some(file), move |file| {
        let bar = bar.clone();
        async move {
            let mut file = file?;
            let mut buf = vec![0; 64 * 1024];
            match file.read(&mut buf) {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    bar.inc(n as u64);
                    Some((Ok(Bytes::from(buf)), Some(file)))
                }
                Err(e) => Some((Err(actix_web::error::PayloadError::Io(e)), None)),
            }
        }
    });
    let stream: Pin<Box<dyn futures_util::Stream<Item = _>>> = Box::pin(stream);
    Payload::from(stream)
}

/// A refusal's problem: its detail, and each of its `errors` on a line of its own, on stderr;
/// the error the command ends with.
fn refusal(body: &[u8], console: &mut Console) -> BoxError {
    let Ok(problem) = serde_json::from_slice::<Value>(body) else {
        return String::from_utf8_lossy(body).into_owned().into();
    };
    print_errors(&problem, console);
    let detail = problem
        .get("detail")
        .or_else(|| problem.get("title"))
        .and_then(Value::as_str)
        .unwrap_or("refused");
    let status = problem.get("status").and_then(Value::as_u64).unwrap_or(0);
    format!("refused ({status}): {detail}; nothing was written").into()
}

/// Each of the answer's `errors`: `line N, member: what is wrong`.
fn print_errors(answer: &Value, console: &mut Console) {
    for e in answer
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let detail = e.get("detail").and_then(Value::as_str).unwrap_or_default();
        let place = e
            .get("pointer")
            .and_then(Value::as_str)
            .and_then(|p| p.strip_prefix("/lines/"))
            .map(|p| match p.split_once('/') {
                Some((line, member)) => format!("line {line}, {member}"),
                None => format!("line {p}"),
            });
        match place {
            Some(place) => {
                let what = detail
                    .split_once(": ")
                    .filter(|(head, _)| head.starts_with("line "))
                    .map_or(detail, |(_, rest)| rest);
                console.eprintln(&format!("{place}: {what}"));
            }
            None => console.eprintln(detail),
        }
    }
}
