//! `GET <prefix>export/`: the list, whole, as CSV or NDJSON, streamed from the database.
//!
//! The request is judged as INDEX judges it (the caller, the read rule and scope, the filters,
//! `filter`, `scope=`, `sort`, `fields`, the members the caller may not read), in one read
//! snapshot; then the rows are read in chunks of `EXPORT_CHUNK_ROWS` by keyset (the list's
//! cursor condition: after the last row's sort values and id), each chunk in a snapshot of its
//! own, rendered straight into bytes and handed to the response body only when the client has
//! taken the previous ones: memory holds one chunk whatever the number of rows, and a slow
//! client slows the reads down rather than filling a buffer. Before a chunk is read, at most
//! once every [`SESSION_CHECK`], the caller's session is checked again: an export whose user
//! was disabled, logged out everywhere, or granted or revoked a role since it began is cut
//! short.

use super::{cells, Format};
use crate::auth::extract::Standing;
use crate::auth::{CurrentUser, RoleGrant};
use crate::condition::{Condition, Sort};
use crate::crud::list::cursor::{self, Position};
use crate::crud::list::{conditions, judged_query, position_of};
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::shared::Shared;
use crate::crud::view::View;
use crate::crud::{Resource, Window};
use crate::db::{snapshot, Conn, Database};
use crate::error::Error;
use crate::json::Members;
use crate::perms::Door;
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::Stream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often, at most, a running export checks that its session still holds: before the
/// next chunk once this much has passed since the last check (or since it was judged), so
/// that an export of small chunks does not pay a query for each.
const SESSION_CHECK: Duration = Duration::from_secs(1);

/// The list parameters an export does not take: it has no pages and embeds nothing.
const REFUSED: [&str; 5] = ["page", "page_size", "cursor", "count", "expand"];

/// What an export reads and writes: the rows' conditions and order, the members written, the
/// viewer the read rules judge for, the format and the size of a chunk. Made from a request
/// by [`export`]; the command line can make one of its own.
pub(crate) struct Plan {
    /// Every condition the rows match (scope, parents, filters), without any position.
    pub(crate) conds: Condition,
    /// The sort keys (the id is the last key, as in the list).
    pub(crate) sort: Vec<Sort>,
    /// `fields`: the members each item keeps; `None`: all those the viewer may read.
    pub(crate) fields: Option<Vec<&'static str>>,
    /// The account the items are rendered for (read rules).
    pub(crate) viewer: Option<CurrentUser>,
    /// CSV or NDJSON.
    pub(crate) format: Format,
    /// Rows per query.
    pub(crate) chunk: u32,
    /// The session it was judged in, checked again as it runs (`None`: anonymous).
    pub(crate) session: Option<Judged>,
}

/// The session an export was judged in: the user, the credential version of its token, and
/// the role grants the rows and members were judged with.
pub(crate) struct Judged {
    pub(crate) user: uuid::Uuid,
    pub(crate) version: i64,
    pub(crate) roles: Vec<RoleGrant>,
}

/// `GET <prefix>export/`: the items the caller may list, as CSV or NDJSON (`format`, or the
/// `Accept` header), streamed.
pub(crate) async fn export<R: Resource>(
    shared: Arc<Shared<R>>,
    req: HttpRequest,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let mut params = Params::of(req.query_string())?;
    let format = format_of(&req, params.take("format").as_deref())?;
    for p in REFUSED {
        if params.get(p).is_some() {
            return Err(Error::bad_param(
                p,
                format!("an export takes every row at once and does not take `{p}`"),
            ));
        }
    }
    let plan = snapshot::read(&st.db, async |conn| {
        judge(&shared, &req, st, &params, conn, format).await
    })
    .await?;
    let body = stream(shared, st.db.clone(), plan);
    let name = format!("{}.{}", R::NAME.to_lowercase(), format.extension());
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, format.media_type()))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(body))
}

/// The format asked for: `format=csv|ndjson`, else the first of `text/csv` and
/// `application/x-ndjson` the `Accept` header names, else CSV.
///
/// # Errors
///
/// A 400 naming `format` for another value.
fn format_of(req: &HttpRequest, param: Option<&str>) -> Result<Format, Error> {
    match param {
        Some("csv") => return Ok(Format::Csv),
        Some("ndjson") => return Ok(Format::Ndjson),
        Some(_) => return Err(Error::bad_param("format", "must be `csv` or `ndjson`")),
        None => {}
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Ok(accept
        .split(',')
        .find_map(Format::of_media_type)
        .unwrap_or(Format::Csv))
}

/// The request judged as INDEX judges it, in its snapshot: the plan of the export.
async fn judge<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    st: &ApiState,
    params: &Params,
    conn: &mut Conn,
    format: Format,
) -> Result<Plan, Error> {
    let (who, gated) =
        relations::rules::at_door(shared, req, Operation::Index, Door::Export, Some(conn)).await?;
    let rows = who.rows_read::<R>(params)?;
    let scope = gated.read_scope(&who, shared, req, rows)?;
    let (mut q, _) = judged_query(shared, params, st, who.viewer())?;
    // The keyset compares the row's own values: a sort across a relation has none.
    if let Some(s) = q.sort.iter().find(|s| R::field(s.field).is_none()) {
        return Err(Error::bad_param(
            "sort",
            format!(
                "an export sorts by the resource's own members only, not `{}`",
                s.field
            ),
        ));
    }
    let conds = conditions(shared, req, params, conn, scope, &mut q, who.viewer()).await?;
    // The viewer's session, checked again as the export runs (a public list's viewer is
    // nobody: what it writes depends on no one's rights).
    let claims = crate::auth::extract::bearer_claims(req)?;
    let session = who.viewer().zip(claims).map(|(u, c)| Judged {
        user: u.id,
        version: c.ver.unwrap_or(0),
        roles: u.roles.clone(),
    });
    Ok(Plan {
        conds,
        sort: q.sort,
        fields: q.fields,
        viewer: who.viewer().cloned(),
        format,
        chunk: st.config.http.export_chunk_rows,
        session,
    })
}

/// The members written, in order: those of the INDEX answer (its substituted schema's when it
/// has one), without those the viewer never reads, kept to `fields` when given; each with
/// whether its cells hold JSON text.
fn columns<R: Resource>(shared: &Shared<R>, plan: &Plan) -> Vec<(String, bool)> {
    let hidden = never_read::<R>(plan.viewer.as_ref());
    let names: Vec<String> = match shared.ops.get(&Operation::Index).and_then(|o| o.members) {
        Some(members) => members(),
        None => R::FIELDS
            .iter()
            .filter(|f| !f.write_only)
            .map(|f| f.name.to_owned())
            .collect(),
    };
    names
        .into_iter()
        .filter(|n| !hidden.contains(&n.as_str()))
        .filter(|n| plan.fields.as_ref().is_none_or(|f| f.contains(&n.as_str())))
        .map(|n| {
            let json = cells::is_json(R::field(&n));
            (n, json)
        })
        .collect()
}

/// Where the rendered items go: a CSV writer (its columns, and one reused cell) or NDJSON
/// lines, both into a buffer handed out after each chunk.
enum Sink {
    Csv {
        // Boxed: the writer carries its own buffer's state, much larger than a `Vec`.
        out: Box<csv::Writer<Vec<u8>>>,
        columns: Vec<(String, bool)>,
        cell: String,
    },
    Ndjson(Vec<u8>),
}

impl Sink {
    fn new<R: Resource>(shared: &Shared<R>, plan: &Plan) -> Result<Sink, Error> {
        Ok(match plan.format {
            Format::Ndjson => Sink::Ndjson(Vec::with_capacity(1 << 16)),
            Format::Csv => {
                let columns = columns(shared, plan);
                let mut out = csv_writer(Vec::with_capacity(1 << 16));
                out.write_record(columns.iter().map(|(n, _)| n.as_bytes()))
                    .map_err(csv_error)?;
                Sink::Csv {
                    out,
                    columns,
                    cell: String::new(),
                }
            }
        })
    }

    /// Writes one item as the export's view shows it (a JSON object without the members its
    /// viewer may not read; an NDJSON line's kept to `fields`).
    fn item(&mut self, item: &[u8]) -> Result<(), Error> {
        match self {
            Sink::Ndjson(out) => {
                out.extend_from_slice(item);
                out.push(b'\n');
            }
            Sink::Csv { out, columns, cell } => {
                // The item's members borrowed from its text, each written as it is found.
                let item: Members<'_> = serde_json::from_slice(item)
                    .map_err(|e| Error::Internal(format!("an exported item: {e}")))?;
                let mut hint = 0;
                for (name, json) in columns.iter() {
                    cells::write(find(&item, name, &mut hint), *json, cell)
                        .map_err(|e| Error::Internal(format!("an exported item: {e}")))?;
                    out.write_field(cell.as_bytes()).map_err(csv_error)?;
                }
                // Ends the record begun by the fields.
                out.write_record(None::<&[u8]>).map_err(csv_error)?;
            }
        }
        Ok(())
    }

    /// What was written since the last call.
    fn take(&mut self) -> Result<web::Bytes, Error> {
        let out = match self {
            Sink::Ndjson(out) => {
                let cap = out.capacity();
                std::mem::replace(out, Vec::with_capacity(cap))
            }
            Sink::Csv { out, .. } => {
                // The writer keeps its buffer to itself: a new one takes its place.
                let cap = out.get_ref().capacity();
                std::mem::replace(out, csv_writer(Vec::with_capacity(cap)))
                    .into_inner()
                    .map_err(|e| Error::Internal(format!("writing CSV: {}", e.error())))?
            }
        };
        Ok(web::Bytes::from(out))
    }
}

/// A CSV writer into `out`: RFC 4180, lines ending in CRLF.
fn csv_writer(out: Vec<u8>) -> Box<csv::Writer<Vec<u8>>> {
    Box::new(
        csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(out),
    )
}

fn csv_error(e: csv::Error) -> Error {
    Error::Internal(format!("writing CSV: {e}"))
}

/// Where a running export is: its plan, what it writes into, the position after the last row
/// written, whether the last chunk was read.
struct Run<R: Resource> {
    shared: Arc<Shared<R>>,
    db: Database,
    plan: Plan,
    sink: Option<Sink>,
    after: Option<Position>,
    done: bool,
    /// When the session was last found to hold.
    checked: Instant,
}

/// The export of `plan` as a stream of byte chunks: the CSV header (with the first chunk),
/// then each chunk of rows, read only when the previous one was taken. An error ends the
/// stream with it (logged; the response is cut short, so the client sees an incomplete
/// transfer rather than a complete file).
pub(crate) fn stream<R: Resource>(
    shared: Arc<Shared<R>>,
    db: Database,
    plan: Plan,
) -> impl Stream<Item = Result<web::Bytes, Error>> + 'static {
    let run = Run {
        shared,
        db,
        plan,
        sink: None,
        after: None,
        done: false,
        checked: Instant::now(),
    };
    futures_util::stream::unfold(run, |mut run| async move {
        if run.done {
            return None;
        }
        match next_chunk(&mut run).await {
            Ok(bytes) => Some((Ok(bytes), run)),
            Err(e) => {
                // The caller's session ended or their roles changed: expected, not a fault.
                if matches!(e, Error::Unauthorized(_) | Error::Forbidden(_)) {
                    tracing::warn!(resource = R::NAME, reason = %e, "export cut short");
                } else {
                    tracing::error!(resource = R::NAME, error = %e, "export cut short");
                }
                run.done = true;
                Some((Err(e), run))
            }
        }
    })
}

/// Reads, renders and hands out the next chunk of rows (with the CSV header before the
/// first).
async fn next_chunk<R: Resource>(run: &mut Run<R>) -> Result<web::Bytes, Error> {
    if run.checked.elapsed() >= SESSION_CHECK {
        check_session(&run.db, run.plan.session.as_ref()).await?;
        run.checked = Instant::now();
    }
    if run.sink.is_none() {
        run.sink = Some(Sink::new(&*run.shared, &run.plan)?);
    }
    let plan = &run.plan;
    let conds = match &run.after {
        None => plan.conds.clone(),
        Some(at) => {
            let after = cursor::keyset(R::FIELDS, &plan.sort, R::ID_FIELD, at);
            plan.conds.clone().and(Condition::All(vec![after]))
        }
    };
    let window = Window {
        limit: i64::from(plan.chunk),
        offset: 0,
    };
    let rows = snapshot::read(&run.db, async |conn| {
        R::select(conn, &conds, &plan.sort, Some(window)).await
    })
    .await?;
    if rows.len() < plan.chunk as usize {
        run.done = true;
    } else {
        let last = rows.last().and_then(|r| position_of(r, &plan.sort, 1, 0));
        run.after = Some(last.ok_or_else(|| {
            Error::Internal("a sort key holds a value no keyset can follow".into())
        })?);
    }
    let shared = &*run.shared;
    let viewer = plan.viewer.as_ref();
    let fields = plan.fields.as_deref();
    let Some(sink) = run.sink.as_mut() else {
        return Err(Error::Internal("an export without its writer".into()));
    };
    // NDJSON lines are the items kept to `fields`; CSV picks its columns from each item.
    let kept = match sink {
        Sink::Ndjson(_) => fields,
        Sink::Csv { .. } => None,
    };
    View::new(shared, Operation::Index, viewer)
        .fields(kept)
        .each(&run.db, rows, None, |item| sink.item(item))
        .await?;
    sink.take()
}

/// Whether the session an export was judged in still holds with the same rights.
///
/// # Errors
///
/// 401 when it ended (the user disabled or gone, logged out everywhere, the password
/// changed), 403 when a role was granted or revoked since; database errors.
async fn check_session(db: &Database, session: Option<&Judged>) -> Result<(), Error> {
    let Some(s) = session else {
        return Ok(());
    };
    match crate::auth::extract::standing(db, s.user, s.version, &s.roles).await? {
        Standing::Holds => Ok(()),
        Standing::Ended => Err(Error::Unauthorized(
            "The session the export was begun in has ended.".into(),
        )),
        Standing::RightsChanged => Err(Error::Forbidden(
            "The caller's roles changed while the export ran.".into(),
        )),
    }
}

/// The members `viewer` reads on no row at all (an export's columns leave them out; those
/// read on some rows only are there, empty on the others).
fn never_read<R: Resource>(viewer: crate::crud::rules::read::Viewer<'_>) -> Vec<&'static str> {
    R::READ_RULES
        .iter()
        .filter(|(_, r)| r.reach(viewer) == crate::crud::rules::read::Reach::None)
        .map(|(name, _)| *name)
        .collect()
}

/// The raw value of the member `name` of `item`, looked for from position `*hint` on (then
/// from the start), and `*hint` moved past it: reading members in the order they were written
/// finds each at once.
fn find<'a>(
    item: &Members<'a>,
    name: &str,
    hint: &mut usize,
) -> Option<&'a serde_json::value::RawValue> {
    let n = item.0.len();
    let at = (0..n)
        .map(|k| (*hint + k) % n)
        .find(|&i| item.0[i].0 == name)?;
    *hint = at + 1;
    Some(item.0[at].1)
}
