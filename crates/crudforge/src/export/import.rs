//! `POST <prefix>import/`: a CSV file (a header row of member names, then one row per item) or
//! an NDJSON file (one JSON object per line) written through the batch create's path
//! ([`create_all`]: the members the caller may send, server-set members, the rules, the
//! validators, the hooks, the relations' keys, the create rule, a feed's events).
//!
//! By default all or nothing: one transaction, and any refused row refuses the file (422,
//! `errors` naming every refused row by its line and member). With `mode=chunked`, each chunk
//! of `chunk_size` rows commits on its own; a refused row refuses its chunk, and the answer
//! (200) reports the chunks committed and the rows refused. The body is capped as it arrives
//! (`IMPORT_MAX_BYTES`), the rows by `IMPORT_MAX_ROWS`, each row by `MAX_BODY_SIZE` (the body
//! of one POST; 413 past any, naming the row's line); a file that is not what its
//! `Content-Type` says is 422 naming the line, another type 415.
//!
//! Memory: a row becomes JSON values only when the batch create takes it, one row at a time
//! (a first pass checks each row's form without building anything), so that values many times
//! larger than their text are never held for the whole file. Imports run a few at a time
//! (`IMPORT_MAX_CONCURRENT` per process, 503; `IMPORT_MAX_CONCURRENT_PER_USER`, 429; both
//! with `Retry-After`), the slot taken before the body is read.

use super::{cells, Format};
use crate::condition::Cond;
use crate::crud::idempotency::{Answer, IdemKey};
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::relations::rules::Gated;
use crate::crud::request::{parent_conds, Caller};
use crate::crud::shared::Shared;
use crate::crud::write::batch::{create_all, Creates};
use crate::crud::write::create::refuse_anonymous;
use crate::crud::write::{Ended, KeyCheck};
use crate::crud::Resource;
use crate::error::{Error, ItemError, Violation};
use crate::field::FieldInfo;
use crate::perms::Door;
use crate::places::{self, Holder, Place};
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::Arc;

/// Rows per chunk in `mode=chunked` when `chunk_size` is not given.
const DEFAULT_CHUNK: usize = 1000;

/// One row of the file: its line (1-based; a CSV file's header is line 1) and its text, read
/// into the item it makes only when it is written ([`Source::item`]).
struct Row {
    line: u64,
    raw: Raw,
}

/// A row's text as the first pass left it.
enum Raw {
    /// An NDJSON line: where it is in the body (a JSON object, checked).
    Json(Range<usize>),
    /// A CSV record's cells.
    Csv(csv::StringRecord),
}

/// What a row's text is read with: the body (NDJSON) and the members of the CSV header.
struct Source<'a> {
    body: &'a [u8],
    fields: Vec<&'static FieldInfo>,
}

impl Source<'_> {
    /// The item `row` makes, or why its cells are not the members' values.
    fn item(&self, row: &Row) -> Result<Map<String, Value>, Vec<Violation>> {
        let line = row.line;
        match &row.raw {
            Raw::Json(at) => match self.body.get(at.clone()).map(serde_json::from_slice) {
                Some(Ok(Value::Object(obj))) => Ok(obj),
                // The first pass found a JSON object there.
                _ => Err(vec![Violation {
                    pointer: format!("/lines/{line}"),
                    field: "line".to_owned(),
                    detail: format!("line {line}: it is not a JSON object"),
                }]),
            },
            Raw::Csv(record) => {
                let mut obj = Map::new();
                let mut faults = Vec::new();
                for (f, cell) in self.fields.iter().zip(record.iter()) {
                    match cells::read(f, cell) {
                        Ok(Some(v)) => {
                            obj.insert(f.name.to_owned(), v);
                        }
                        Ok(None) => {}
                        Err(why) => faults.push(Violation {
                            pointer: format!("/lines/{line}/{}", f.name),
                            field: f.name.to_owned(),
                            detail: format!("line {line}: {why}"),
                        }),
                    }
                }
                if faults.is_empty() {
                    Ok(obj)
                } else {
                    Err(faults)
                }
            }
        }
    }
}

/// How the rows are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One transaction: every row or none.
    All,
    /// Chunks of this many rows, each committed on its own.
    Chunked(usize),
}

/// `POST <prefix>import/`: creates the file's rows (201 `{"created": n}`), or, with
/// `mode=chunked`, each chunk that passes (200 with a report).
pub(crate) async fn import<R: Resource>(
    shared: Arc<Shared<R>>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let shared = &*shared;
    // Who asks comes first: an anonymous caller learns that it must sign in, not what the
    // body should have been.
    let (who, gated) =
        relations::rules::at_door(shared, &req, Operation::Post, Door::Import, None).await?;
    refuse_anonymous(shared, &who)?;
    let format = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(Format::of_media_type)
        .ok_or_else(|| {
            Error::UnsupportedMediaType(
                "An import takes `text/csv` or `application/x-ndjson`.".into(),
            )
        })?;
    let mode = mode_of(&req, st)?;
    let parents = parent_conds(shared, &req)?;
    // Before the body: an import past the bounds costs neither its memory nor its reading.
    let _places = import_places(st, &who)?;
    let body = read_body(&req, payload, st.config.http.import_max_bytes).await?;
    let held = match mode {
        Mode::All => match KeyCheck::of(shared, st, &req, &body, &who).await? {
            KeyCheck::Replay(stored) => return Ok(stored),
            held => held,
        },
        Mode::Chunked(_) => {
            if req.headers().contains_key(crate::crud::idempotency::HEADER) {
                return Err(Error::bad_param(
                    crate::crud::idempotency::HEADER,
                    "a chunked import commits chunk by chunk and cannot be replayed as one answer; send it without `Idempotency-Key`, or import all or nothing",
                ));
            }
            KeyCheck::Absent
        }
    };
    let bounds = Bounds {
        rows: st.config.http.import_max_rows as usize,
        row_bytes: st.config.http.max_body_size,
    };
    let (rows, fields) = match format {
        Format::Csv => csv_rows::<R>(&body, bounds)?,
        Format::Ndjson => (ndjson_rows(&body, bounds)?, Vec::new()),
    };
    let source = Source {
        body: &body,
        fields,
    };
    if rows.is_empty() {
        return Err(Error::Validation {
            detail: "The file holds no rows.".into(),
            field: None,
        });
    }
    let cx = Cx {
        shared,
        st,
        req: &req,
        who: &who,
        gated: &gated,
        parents: &parents,
        source: &source,
    };
    match mode {
        Mode::All => {
            let n = rows.len();
            let answer = created(201, n)?;
            match write(&cx, rows, held.key(), answer).await? {
                Ok(ended) => Ok(ended.into_response()),
                Err(violations) => Err(Error::Invalid(violations)),
            }
        }
        Mode::Chunked(size) => {
            let mut report = Report::default();
            let mut rows = rows.into_iter().peekable();
            while let Some(first) = rows.peek().map(|r| r.line) {
                let chunk: Vec<Row> = rows.by_ref().take(size).collect();
                let last = chunk.last().map_or(first, |r| r.line);
                let n = chunk.len();
                let answer = created(201, n)?;
                let span = Span {
                    first_line: first,
                    last_line: last,
                    rows: n,
                };
                match write(&cx, chunk, None, answer).await? {
                    Ok(_) => {
                        report.created += n;
                        report.committed.push(span);
                    }
                    Err(violations) => {
                        report.failed.push(span);
                        report.errors.extend(violations);
                    }
                }
            }
            let body = serde_json::to_vec(&report).map_err(|e| Error::Internal(e.to_string()))?;
            Ok(HttpResponse::Ok()
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .body(body))
        }
    }
}

/// What every write of an import shares.
struct Cx<'a, R: Resource> {
    shared: &'a Shared<R>,
    st: &'a ApiState,
    req: &'a HttpRequest,
    who: &'a Caller,
    /// The rows the import's own access lets it create (`CrudBlueprint::door`).
    gated: &'a Gated,
    parents: &'a [Cond],
    source: &'a Source<'a>,
}

/// Writes `rows` through the batch create's path (a row whose cells were refused is refused
/// in its first pass, before anything is written): how it ended, or the refused rows'
/// violations by line.
///
/// # Errors
///
/// The errors that are not a refusal of rows (server errors, a lost race).
async fn write<R: Resource>(
    cx: &Cx<'_, R>,
    rows: Vec<Row>,
    key: Option<&IdemKey>,
    answer: Answer,
) -> Result<Result<Ended, Vec<Violation>>, Error> {
    let lines: Vec<u64> = rows.iter().map(|r| r.line).collect();
    let mut converted = Vec::new();
    // Each row read as the batch takes it, so that one row's values live at a time.
    let items = rows
        .iter()
        .enumerate()
        .map(|(i, row)| match cx.source.item(row) {
            Ok(obj) => Value::Object(obj),
            Err(v) => {
                converted.push((i, v));
                Value::Null
            }
        });
    let creates = Creates {
        who: cx.who,
        gated: cx.gated,
        parents: cx.parents,
        key,
        answer,
    };
    let written = create_all(cx.shared, cx.st, cx.req, creates, items).await;
    match written {
        Ok(ended) => Ok(Ok(ended)),
        Err(Error::Items(refused)) => Ok(Err(by_line(refused, &lines, converted))),
        Err(e) => Err(e),
    }
}

/// The answer of a write of `n` rows: `{"created": n}` (never the rows: an import's answer
/// stays small whatever its size).
fn created(status: u16, n: usize) -> Result<Answer, Error> {
    let mut answer = Answer::new(status, None);
    answer.body = serde_json::to_vec(&serde_json::json!({ "created": n }))
        .map_err(|e| Error::Internal(e.to_string()))?;
    Ok(answer)
}

/// Lines of the file written together (a chunk).
#[derive(serde::Serialize)]
struct Span {
    first_line: u64,
    last_line: u64,
    rows: usize,
}

/// The answer of a chunked import.
#[derive(serde::Serialize, Default)]
struct Report {
    /// Rows created.
    created: usize,
    /// The chunks committed.
    committed: Vec<Span>,
    /// The chunks refused (nothing of them written).
    failed: Vec<Span>,
    /// Every refused row's members at fault, as a 422 lists them.
    errors: Vec<Violation>,
}

/// `mode` and `chunk_size`; any other parameter is 400.
fn mode_of(req: &HttpRequest, st: &ApiState) -> Result<Mode, Error> {
    let mut params = Params::of(req.query_string())?;
    let mode = params.take("mode");
    let size = params.take("chunk_size");
    if let Some((name, _)) = params.pairs().first() {
        return Err(Error::bad_param(
            name.clone(),
            "an import takes only `mode` and `chunk_size`",
        ));
    }
    match (mode.as_deref(), size) {
        (None | Some("all"), None) => Ok(Mode::All),
        (None | Some("all"), Some(_)) => Err(Error::bad_param(
            "chunk_size",
            "is taken only with `mode=chunked`",
        )),
        (Some("chunked"), None) => Ok(Mode::Chunked(DEFAULT_CHUNK)),
        (Some("chunked"), Some(n)) => {
            let max = st.config.http.import_max_rows;
            match n.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(Mode::Chunked(n as usize)),
                _ => Err(Error::bad_param(
                    "chunk_size",
                    format!("must be an integer from 1 to {max} (IMPORT_MAX_ROWS)"),
                )),
            }
        }
        (Some(_), _) => Err(Error::bad_param("mode", "must be `all` or `chunked`")),
    }
}

/// The body, refused (413) as soon as it grows past `max` bytes (or announces more).
async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    max: usize,
) -> Result<web::Bytes, Error> {
    let too_large = || {
        Error::PayloadTooLarge(
            format!("An import body holds at most {max} bytes (IMPORT_MAX_BYTES).").into(),
        )
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut body = web::BytesMut::with_capacity(
        announced.map_or(8192, |n| usize::try_from(n).unwrap_or(max).min(max)),
    );
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| Error::BadRequest {
            detail: format!("The request body could not be read: {e}"),
            field: None,
        })?;
        if body.len() + chunk.len() > max {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// A file refused as a whole: 422 naming its line.
fn malformed(line: u64, why: impl std::fmt::Display) -> Error {
    Error::Validation {
        detail: format!("Line {line} of the file is malformed: {why}. Nothing was written."),
        field: Some("line".into()),
    }
}

/// More rows than `IMPORT_MAX_ROWS`.
fn too_many(max: usize) -> Error {
    Error::PayloadTooLarge(format!("An import holds at most {max} rows (IMPORT_MAX_ROWS).").into())
}

/// The bounds of the rows of a file.
#[derive(Clone, Copy)]
struct Bounds {
    /// Most rows (`IMPORT_MAX_ROWS`).
    rows: usize,
    /// Most bytes of one row (`MAX_BODY_SIZE`, the body of one POST).
    row_bytes: usize,
}

impl Bounds {
    /// 413 naming line `line` when its row holds more than [`Bounds::row_bytes`].
    fn check_row(self, line: u64, len: usize) -> Result<(), Error> {
        if len <= self.row_bytes {
            return Ok(());
        }
        Err(Error::PayloadTooLarge(
            format!(
                "Line {line} of the file holds {len} bytes; a row holds at most {} bytes (MAX_BODY_SIZE, the body of one POST). Nothing was written.",
                self.row_bytes
            )
            .into(),
        ))
    }
}

/// The rows of a CSV file and the members its header names (in order): each record's cells
/// are read later ([`Source::item`]) by their member's kind (an empty cell: the member is
/// absent).
///
/// # Errors
///
/// 422 for a header naming no member (or one twice), bad UTF-8, a row with another number of
/// cells than the header, an unclosed quote; 413 past the rows or a row's bytes.
fn csv_rows<R: Resource>(
    body: &[u8],
    bounds: Bounds,
) -> Result<(Vec<Row>, Vec<&'static FieldInfo>), Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(body);
    let headers = reader
        .headers()
        .map_err(|e| csv_malformed(e, body))?
        .clone();
    let mut fields: Vec<&'static FieldInfo> = Vec::with_capacity(headers.len());
    for name in &headers {
        let Some(f) = R::field(name) else {
            return Err(Error::invalid_field(
                name,
                format!(
                    "(a column of the header, line 1) is not a member of {}",
                    R::NAME
                ),
            ));
        };
        if fields.iter().any(|g| g.name == f.name) {
            return Err(Error::invalid_field(
                name,
                "is a column of the header twice (line 1)",
            ));
        }
        fields.push(f);
    }
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut lines = Lines::new(body);
    // Where the last record starts (byte and line), to find a quote left open in it.
    let mut last = (0, 1);
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_malformed(e, body)),
        }
        if rows.len() == bounds.rows {
            return Err(too_many(bounds.rows));
        }
        let byte = record.position().map_or(0, csv::Position::byte);
        let line = lines.at(byte);
        last = (byte, line);
        bounds.check_row(line, record.as_slice().len())?;
        rows.push(Row {
            line,
            raw: Raw::Csv(record.clone()),
        });
    }
    // The reader ends a quoted cell left open at the end of the file: refuse it.
    let tail = usize::try_from(last.0)
        .ok()
        .and_then(|at| body.get(at..))
        .unwrap_or_default();
    if ends_in_open_quote(tail) {
        return Err(malformed(last.1, "a quoted cell is not closed"));
    }
    Ok((rows, fields))
}

/// Whether the CSV text `tail`, which starts at a record, ends inside a quoted cell (a `"`
/// opening a cell, without its closing `"`; `""` inside is an escaped quote).
fn ends_in_open_quote(tail: &[u8]) -> bool {
    let mut at_start = true;
    let mut quoted = false;
    let mut i = 0;
    while let Some(&b) = tail.get(i) {
        if quoted {
            if b == b'"' {
                if tail.get(i + 1) == Some(&b'"') {
                    i += 1;
                } else {
                    quoted = false;
                }
            }
        } else if b == b'"' && at_start {
            quoted = true;
        }
        at_start = !quoted && matches!(b, b',' | b'\n' | b'\r');
        i += 1;
    }
    quoted
}

/// Line numbers of byte offsets in a file, counted from its `\n`s (the `csv` crate's own count
/// is one short after each `\r\n`, the line ending its writer and RFC 4180 use).
struct Lines<'a> {
    body: &'a [u8],
    /// The offset counted to, and the line it is on.
    at: usize,
    line: u64,
}

impl<'a> Lines<'a> {
    fn new(body: &'a [u8]) -> Self {
        Lines {
            body,
            at: 0,
            line: 1,
        }
    }

    /// The line (from 1) of the record the reader says starts at `offset` (after the line ends
    /// there: with `\r\n`, the reader's offset is that of the `\n`); offsets are asked for in
    /// increasing order (an earlier one is counted again from the start).
    fn at(&mut self, offset: u64) -> u64 {
        let mut to = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.body.len());
        while matches!(self.body.get(to), Some(b'\r' | b'\n')) {
            to += 1;
        }
        if to < self.at {
            (self.at, self.line) = (0, 1);
        }
        let newlines = self.body[self.at..to]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        self.line += newlines as u64;
        self.at = to;
        self.line
    }
}

/// A malformed CSV file (`body`): 422 naming the line the reader was at.
fn csv_malformed(e: csv::Error, body: &[u8]) -> Error {
    let line = e.position().map_or(1, |p| Lines::new(body).at(p.byte()));
    let why = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "it is not valid UTF-8".to_owned(),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("it has {len} cells where the header has {expected_len}"),
        _ => "it cannot be read as CSV".to_owned(),
    };
    malformed(line, why)
}

/// The rows of an NDJSON file: one JSON object per line, blank lines skipped. Each line is
/// checked here without building its values (they are built as it is written).
///
/// # Errors
///
/// 422 naming the first line that is not a JSON object (or not UTF-8); 413 past the rows or
/// a line's bytes.
fn ndjson_rows(body: &[u8], bounds: Bounds) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let mut start = 0;
    for (i, text) in body.split(|b| *b == b'\n').enumerate() {
        let at = start..start + text.len();
        start = at.end + 1;
        let line = i as u64 + 1;
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if rows.len() == bounds.rows {
            return Err(too_many(bounds.rows));
        }
        bounds.check_row(line, text.len())?;
        let Ok(text) = std::str::from_utf8(text) else {
            return Err(malformed(line, "it is not JSON"));
        };
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
            return Err(malformed(line, "it is not JSON"));
        }
        if !text.trim_start().starts_with('{') {
            return Err(malformed(line, "it is not a JSON object"));
        }
        rows.push(Row {
            line,
            raw: Raw::Json(at),
        });
    }
    Ok(rows)
}

/// An import's places among those its API runs at once, its caller's and one of all, given
/// back when dropped.
///
/// # Errors
///
/// 429 when `who` runs `IMPORT_MAX_CONCURRENT_PER_USER` imports already, 503 when the
/// process runs `IMPORT_MAX_CONCURRENT`; both with `Retry-After`.
fn import_places(st: &ApiState, who: &Caller) -> Result<(Place, Place), Error> {
    let user = match who {
        Caller::Admin(u) | Caller::User(Some(u)) => Some(u.id),
        Caller::Public | Caller::User(None) => None,
    };
    let api = places::api_of(st);
    let http = &st.config.http;
    let per_user = http.import_max_concurrent_per_user;
    let mine = Place::take(api, "import", Holder::User(user), per_user).ok_or_else(|| {
        Error::TooManyRequests {
            detail: format!(
                "You are running {per_user} imports already, the most one caller may run at once (IMPORT_MAX_CONCURRENT_PER_USER); try again when one has ended."
            )
            .into(),
            retry_after: 5,
        }
    })?;
    let all = Place::take(api, "import", Holder::All, http.import_max_concurrent).ok_or_else(|| {
        Error::Busy {
            detail: "The service is running as many imports as it runs at once (IMPORT_MAX_CONCURRENT); try again shortly.".into(),
            retry_after: 5,
        }
    })?;
    Ok((mine, all))
}

/// The batch's refusal of the rows at `lines` (by their index in the write), with the rows
/// whose cells were refused before it (`converted`), as violations naming each row's line.
fn by_line(
    refused: Vec<ItemError>,
    lines: &[u64],
    converted: Vec<(usize, Vec<Violation>)>,
) -> Vec<Violation> {
    let mut out: Vec<(usize, Vec<Violation>)> = converted;
    for item in refused {
        if out.iter().any(|(i, _)| *i == item.index) {
            continue;
        }
        let line = lines.get(item.index).copied().unwrap_or(0);
        let problem = item.error.problem();
        let found = if problem.errors.is_empty() {
            let (pointer, field) = match problem.field {
                Some(f) => (format!("/lines/{line}/{f}"), f),
                None => (format!("/lines/{line}"), "line".to_owned()),
            };
            vec![Violation {
                pointer,
                field,
                detail: format!("line {line}: {}", problem.detail),
            }]
        } else {
            problem
                .errors
                .into_iter()
                .map(|v| Violation {
                    pointer: format!("/lines/{line}{}", v.pointer),
                    detail: format!("line {line}: {}", v.detail),
                    field: v.field,
                })
                .collect()
        };
        out.push((item.index, found));
    }
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().flat_map(|(_, v)| v).collect()
}
