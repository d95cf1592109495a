//! The routes of file members (the `files` feature). A `multipart/form-data` create or update
//! stores its files first, hands the JSON part and the files' metadata to the ordinary create
//! or update, and removes the stored files again when that write fails, so a failed write
//! leaves no file and a stored file's row always exists. After a write commits, the files it
//! replaced or removed (a new upload, `null`, or the row's hard delete) are removed. A file
//! downloads from `<item>/files/<file id>` under the row's read rules, as a `GET` of the row
//! would show it.

mod download;
mod link;

pub(crate) use download::download;
pub(crate) use link::link;

use crate::condition::Condition;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::request::{caller, item_conds, not_found};
use crate::crud::rows::select_one;
use crate::crud::rules::read;
use crate::crud::shared::Shared;
use crate::crud::write;
use crate::crud::Resource;
use crate::db::snapshot;
use crate::error::Error;
use crate::files::lists::ListEdits;
use crate::files::storage::Storage;
use crate::files::upload::{self, Uploads};
use crate::files::File;
use crate::perms::Door;
use crate::state::ApiState;
use actix_web::guard::GuardContext;
use actix_web::http::header;
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use std::sync::Arc;

/// The path segment under an item that its files download from.
pub(crate) const SEGMENT: &str = "files";

/// The match-info name of a file's id in the download path.
pub(crate) const FILE_PARAM: &str = "file_id";

/// Whether `R` has file members.
pub(crate) fn has_files<R: Resource>() -> bool {
    R::FIELDS.iter().any(|f| f.file.is_some())
}

/// The guard of the multipart routes.
pub(crate) fn is_multipart(ctx: &GuardContext<'_>) -> bool {
    ctx.head()
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("multipart/form-data"))
        })
}

/// Reads a multipart body into stored files and the JSON handed on.
async fn uploads<R: Resource>(req: &HttpRequest, payload: web::Payload) -> Result<Uploads, Error> {
    if req.headers().contains_key("idempotency-key") {
        return Err(Error::bad_param(
            "Idempotency-Key",
            "is not accepted with a multipart upload; retry an upload by its result",
        ));
    }
    let st = ApiState::of(req)?;
    upload::read(
        req.headers(),
        payload,
        R::FIELDS,
        R::sql_table(),
        super::storage_of(st)?,
        st.config.http.max_body_size,
    )
    .await
}

/// Marks `req` as carrying `uploads`: its body is the JSON part, its files go in the body.
fn hand_on(req: &HttpRequest, uploads: &Uploads) {
    let mut ext = req.extensions_mut();
    ext.insert(crate::json::FromMultipart);
    ext.insert(upload::Uploaded(Arc::new(uploads.files.clone())));
}

/// Whether a write's answer says it happened.
fn succeeded(answer: &Result<HttpResponse, Error>) -> bool {
    matches!(answer, Ok(r) if r.status().is_success())
}

/// `POST` of the prefix with a multipart body.
pub(crate) async fn create<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Error> {
    let files = super::storage_of(ApiState::of(&req)?)?.clone();
    // The caller is judged before the body is read: a request the operation refuses stores
    // nothing (the user is cached on the request; the create judges them again).
    let who = caller(shared, &req, Operation::Post).await?;
    write::create::refuse_anonymous(shared, &who)?;
    let uploads = uploads::<R>(&req, payload).await?;
    hand_on(&req, &uploads);
    let answer =
        write::create::post(shared, req.clone(), web::Bytes::from(uploads.data.clone())).await;
    settle::<R>(&files, &req, answer, &[], &uploads.stored()).await
}

/// Finishes a write on a resource with file members: once it succeeded, removes the files it
/// replaced or removed (`before`) and those its list edits took out; when it failed, the
/// files it had stored (`uploaded`).
async fn settle<R: Resource>(
    files: &Storage,
    req: &HttpRequest,
    answer: Result<HttpResponse, Error>,
    before: &[(&'static str, uuid::Uuid)],
    uploaded: &[(&'static str, uuid::Uuid)],
) -> Result<HttpResponse, Error> {
    if succeeded(&answer) {
        let mut gone = before.to_vec();
        if let Some(lists) = ListEdits::of(req) {
            gone.extend(lists.removed().into_iter().map(|id| (R::sql_table(), id)));
        }
        files.remove_all(&gone).await;
    } else {
        files.remove_all(uploaded).await;
    }
    answer
}

/// `PATCH` of an item with a multipart body.
pub(crate) async fn update_multipart<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Error> {
    // The caller and their update rule are judged before the body is read (as in `create`).
    let who = caller(shared, &req, Operation::Patch).await?;
    write::target::Target::of(shared, &req, &who)?;
    let uploads = uploads::<R>(&req, payload).await?;
    update_with(shared, req, uploads).await
}

/// `PATCH` of an item with a JSON body, on a resource with file members: a member set to
/// `null` loses its file once the update commits.
pub(crate) async fn update<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let files = super::storage_of(ApiState::of(&req)?)?.clone();
    let before = current_files(shared, &req, &nulled_members::<R>(&body)).await?;
    let answer = write::update::update(shared, req.clone(), body).await;
    settle::<R>(&files, &req, answer, &before, &[]).await
}

async fn update_with<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    uploads: Uploads,
) -> Result<HttpResponse, Error> {
    let files = super::storage_of(ApiState::of(&req)?)?.clone();
    // A new file replaces a single file; a list's new files are added to it.
    let mut changed = nulled_members::<R>(&uploads.data);
    changed.extend(
        uploads
            .files
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| !upload::is_list(R::FIELDS, m)),
    );
    let before = match current_files(shared, &req, &changed).await {
        Ok(b) => b,
        Err(e) => {
            files.remove_all(&uploads.stored()).await;
            return Err(e);
        }
    };
    hand_on(&req, &uploads);
    let answer =
        write::update::update(shared, req.clone(), web::Bytes::from(uploads.data.clone())).await;
    settle::<R>(&files, &req, answer, &before, &uploads.stored()).await
}

/// `DELETE` of an item on a resource with file members: once a hard delete commits, the row's
/// files are removed (a soft delete keeps them until the row is purged).
pub(crate) async fn delete<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    if R::SOFT_DELETE {
        return write::delete::delete(shared, req, body).await;
    }
    let files = super::storage_of(ApiState::of(&req)?)?.clone();
    let members: Vec<&'static str> = file_members::<R>().collect();
    let before = current_files(shared, &req, &members).await?;
    let answer = write::delete::delete(shared, req.clone(), body).await;
    settle::<R>(&files, &req, answer, &before, &[]).await
}

/// The batch delete on a resource with file members: once it commits, the files of the rows
/// it removed go too (those the table held before it and no longer does; a soft delete keeps
/// them).
pub(crate) async fn delete_batch<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    if R::SOFT_DELETE {
        return write::batch::delete(shared, req, body).await;
    }
    let st = ApiState::of(&req)?;
    let (files, db) = (super::storage_of(st)?.clone(), st.db.clone());
    let before = referenced::<R>(&mut db.get().await?).await?;
    let answer = write::batch::delete(shared, req, body).await;
    if succeeded(&answer) {
        let after: std::collections::HashSet<uuid::Uuid> = referenced::<R>(&mut db.get().await?)
            .await?
            .into_iter()
            .collect();
        let gone: Vec<_> = before
            .into_iter()
            .filter(|id| !after.contains(id))
            .map(|id| (R::sql_table(), id))
            .collect();
        files.remove_all(&gone).await;
    }
    answer
}

fn file_members<R: Resource>() -> impl Iterator<Item = &'static str> {
    R::FIELDS
        .iter()
        .filter(|f| f.file.is_some())
        .map(|f| f.name)
}

/// The file members a JSON body sets to `null`.
fn nulled_members<R: Resource>(body: &[u8]) -> Vec<&'static str> {
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return Vec::new();
    };
    file_members::<R>()
        .filter(|m| obj.get(*m).is_some_and(serde_json::Value::is_null))
        .collect()
}

/// The files the addressed row holds now in `members` (none when it does not exist).
async fn current_files<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    members: &[&'static str],
) -> Result<Vec<(&'static str, uuid::Uuid)>, Error> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let st = ApiState::of(req)?;
    let conds = Condition::from(item_conds(shared, req)?);
    let mut conn = st.db.get().await?;
    let Some(item) = select_one::<R>(&mut conn, &conds).await? else {
        return Ok(Vec::new());
    };
    Ok(files_of(item, &[])
        .into_iter()
        .filter(|(m, _)| members.contains(m))
        .map(|(_, f)| (R::sql_table(), f.id))
        .collect())
}

/// The files `item` holds, by member, leaving out the members in `hidden`.
fn files_of<R: Resource>(item: R, hidden: &[&str]) -> Vec<(&'static str, File)> {
    let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(R::Response::from(item)) else {
        return Vec::new();
    };
    file_members::<R>()
        .filter(|m| !hidden.contains(m))
        .flat_map(|m| {
            obj.get(m)
                .map(crate::files::files_in)
                .unwrap_or_default()
                .into_iter()
                .map(move |f| (m, f))
        })
        .collect()
}

/// The file of the addressed row named by the path, as `who` may read it: the row under the
/// read rules and scope, the member under the member read rules (`None`: no such file, or one
/// `who` may not see).
pub(super) async fn readable_file<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    who: Option<crate::auth::CurrentUser>,
) -> Result<(&'static str, File), Error> {
    let st = ApiState::of(req)?;
    let no_file = || Error::NotFound("No such file exists at this path.".into());
    let wanted = req
        .match_info()
        .get(FILE_PARAM)
        .and_then(|v| uuid::Uuid::parse_str(v).ok())
        .ok_or_else(no_file)?;
    let (who, gated) =
        relations::rules::at_door_for(shared, req, Operation::Get, Door::Download, who.as_ref())?;
    snapshot::read(&st.db, async |conn| {
        let rows = who.rows_read::<R>(&Params::of("")?)?;
        let scope = gated.read_scope(&who, shared, req, rows)?;
        let addressed = Condition::from(item_conds(shared, req)?);
        let conds = if scope.is_always() {
            addressed
        } else {
            addressed.and(scope)
        };
        let item = select_one::<R>(conn, &conds)
            .await?
            .ok_or_else(not_found::<R>)?;
        let hidden = read::hidden(&item, who.viewer());
        Ok(files_of(item, &hidden)
            .into_iter()
            .find(|(_, f)| f.id == wanted))
    })
    .await?
    .ok_or_else(no_file)
}

/// One file column's value as text, read by [`referenced`].
#[derive(diesel::QueryableByName)]
struct FileText {
    #[diesel(sql_type = diesel::sql_types::Text)]
    v: String,
}

/// The ids of every file `R`'s rows hold, soft-deleted rows included (they keep their files
/// until they are purged).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn referenced<R: Resource>(
    conn: &mut crate::db::Conn,
) -> Result<Vec<uuid::Uuid>, Error> {
    let mut ids = Vec::new();
    for member in file_members::<R>() {
        // Both names are the model's own identifiers (the derive checks them), quoted.
        let sql = format!(
            "SELECT CAST(\"{member}\" AS TEXT) AS v FROM \"{}\" WHERE \"{member}\" IS NOT NULL",
            R::sql_table()
        );
        let rows: Vec<FileText> = crate::with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::load(diesel::sql_query(sql), c).await
        })?;
        for row in rows {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&row.v) {
                ids.extend(crate::files::files_in(&v).into_iter().map(|f| f.id));
            }
        }
    }
    Ok(ids)
}
