//! The routes of file members (the `files` feature). A `multipart/form-data` create or update
//! stores its files first, hands the JSON part and the files' metadata to the ordinary create
//! or update, and removes the stored files again when that write fails, so a failed write
//! leaves no file and a stored file's row always exists. After a write commits, the files it
//! replaced or removed (a new upload, `null`, or the row's hard delete) are removed. A file
//! downloads from `<item>/files/<file id>` under the row's read rules, as a `GET` of the row
//! would show it.

use crate::condition::Condition;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::request::{caller_for, item_conds, not_found};
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
use crate::state::ApiState;
use actix_web::guard::GuardContext;
use actix_web::http::header;
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use std::sync::Arc;

/// The path segment under an item that its files download from.
pub(crate) const SEGMENT: &str = "files";

/// The match-info name of a file's id in the download path.
pub(crate) const FILE_PARAM: &str = "file_id";

/// The bytes read from storage per chunk of a download.
const READ_CHUNK: usize = 256 * 1024;

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
        &st.files,
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
    let files = ApiState::of(&req)?.files.clone();
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
    let files = ApiState::of(&req)?.files.clone();
    let before = current_files(shared, &req, &nulled_members::<R>(&body)).await?;
    let answer = write::update::update(shared, req.clone(), body).await;
    settle::<R>(&files, &req, answer, &before, &[]).await
}

async fn update_with<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    uploads: Uploads,
) -> Result<HttpResponse, Error> {
    let files = ApiState::of(&req)?.files.clone();
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
    let files = ApiState::of(&req)?.files.clone();
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
    let (files, db) = (st.files.clone(), st.db.clone());
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
async fn readable_file<R: Resource>(
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
    let who = caller_for(shared, Operation::Get, who.as_ref())?;
    snapshot::read(&st.db, async |conn| {
        let rows = who.rows_read::<R>(&Params::of("")?)?;
        let scope =
            relations::rules::scope_in(&who, shared, req, rows, relations::rules::Kind::Read)?;
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

/// `GET <item>/files/<file id>`: the file, to a caller who may read the row and the member;
/// with `?link=`, to the user the signed link was made for.
pub(crate) async fn download<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = match link_param(&req)? {
        Some(link) => Some(link_user(shared, &req, &link).await?),
        None => crate::auth::current_user(&req).await?,
    };
    let (member, file) = readable_file(shared, &req, who).await?;
    if let Some(size) = thumb_param::<R>(&req, member)? {
        #[cfg(feature = "thumbnails")]
        return serve_thumb(st, &req, R::sql_table(), &file, size).await;
        #[cfg(not(feature = "thumbnails"))]
        return Err(Error::Internal(format!(
            "a {}x{} thumbnail was asked for, without the `thumbnails` feature",
            size.0, size.1
        )));
    }
    serve(st, &req, R::sql_table(), file).await
}

/// The `thumb=WxH` parameter: one of the boxes `member` declares (400 otherwise).
fn thumb_param<R: Resource>(req: &HttpRequest, member: &str) -> Result<Option<(u32, u32)>, Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| Error::bad_param("thumb", "is malformed"))?;
    let Some((_, asked)) = pairs.into_iter().find(|(k, _)| k == "thumb") else {
        return Ok(None);
    };
    let offered: &[(u32, u32)] = R::FIELDS
        .iter()
        .find(|f| f.name == member)
        .and_then(|f| f.file)
        .map_or(&[], |r| r.thumbs);
    let size =
        crudforge_core::files::parse_box(&asked).map_err(|e| Error::bad_param("thumb", e))?;
    if !offered.contains(&size) {
        let list: Vec<String> = offered.iter().map(|(w, h)| format!("{w}x{h}")).collect();
        return Err(Error::bad_param(
            "thumb",
            if list.is_empty() {
                format!("`{member}` offers no thumbnails")
            } else {
                format!("`{member}` offers {}", list.join(", "))
            },
        ));
    }
    Ok(Some(size))
}

/// A file's thumbnail in box `size`: kept from an earlier request, or made now from the file
/// (on the blocking pool) and kept.
#[cfg(feature = "thumbnails")]
async fn serve_thumb(
    st: &ApiState,
    req: &HttpRequest,
    table: &'static str,
    file: &File,
    size: (u32, u32),
) -> Result<HttpResponse, Error> {
    let etag = format!("\"{}-{}x{}\"", file.id.hyphenated(), size.0, size.1);
    let media_type = crate::files::thumbs::thumb_type(&file.media_type);
    let answer = |status| {
        let mut b = HttpResponse::build(status);
        b.insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, "private, no-cache"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; sandbox; frame-ancestors 'none'",
            ));
        b
    };
    if not_modified(req, &etag) {
        return Ok(answer(actix_web::http::StatusCode::NOT_MODIFIED).finish());
    }
    let storage = &st.files;
    let bytes = match storage.thumb(table, file.id, size).await? {
        Some(kept) => kept,
        None => {
            let len = usize::try_from(file.size)
                .map_err(|_| Error::Internal("a stored file larger than memory".into()))?;
            let source = storage.read(table, file.id, 0, len).await?;
            let source_type = file.media_type.clone();
            let made = web::block(move || crate::files::thumbs::make(&source, &source_type, size))
                .await
                .map_err(|e| Error::Internal(format!("making a thumbnail: {e}")))??;
            storage
                .keep_thumb(table, file.id, size, made.clone())
                .await?;
            made
        }
    };
    Ok(answer(actix_web::http::StatusCode::OK)
        .insert_header((header::CONTENT_TYPE, media_type))
        .insert_header((header::CONTENT_DISPOSITION, "inline"))
        .body(bytes))
}

/// `POST <item>/files/<file id>/link`: a URL that downloads the file without a header (for
/// an `<img src>`), valid `FILES_LINK_SECONDS`, for the caller alone.
pub(crate) async fn link<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let Some(user) = crate::auth::current_user(&req).await? else {
        return Err(Error::Unauthorized("Authentication required.".into()));
    };
    let (_, file) = readable_file(shared, &req, Some(user.clone())).await?;
    let key = req
        .match_info()
        .get(&shared.res_id_param)
        .ok_or_else(|| Error::Internal("no item key in the path".into()))?;
    let expires = chrono::Utc::now().timestamp()
        + i64::try_from(st.config.ops.files_link_seconds).unwrap_or(i64::MAX / 2);
    let sig = link_signature(st, R::sql_table(), key, file.id, user.id, expires);
    let path = req.path();
    let download = path.strip_suffix("/link").unwrap_or(path);
    let token = format!("{expires}.{}.{sig}", user.id.simple());
    let body = serde_json::json!({
        "url": format!("{download}?link={token}"),
        "expires_at": chrono::DateTime::from_timestamp(expires, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    });
    Ok(HttpResponse::Ok().json(body))
}

/// The `link` query parameter, when the request has one.
fn link_param(req: &HttpRequest) -> Result<Option<String>, Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| Error::bad_param("link", "is malformed"))?;
    let mut links = pairs
        .into_iter()
        .filter(|(k, _)| k == "link")
        .map(|(_, v)| v);
    let first = links.next();
    if links.next().is_some() {
        return Err(Error::bad_param("link", "is given twice"));
    }
    Ok(first)
}

/// The signature of a link to file `file` of row `key` of `table`, for `user`, until `expires`
/// (seconds since the epoch): HMAC-SHA-256 under the signing key, over a message no token
/// signature can share (it starts with a zero byte), URL-safe base64.
fn link_signature(
    st: &ApiState,
    table: &str,
    key: &str,
    file: uuid::Uuid,
    user: uuid::Uuid,
    expires: i64,
) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(st.signing_key.expose())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    let message = format!("\0crudforge file link\0{table}\0{key}\0{file}\0{user}\0{expires}");
    mac.update(message.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// The user a signed link stands for, when it is genuine, unexpired, for this file, and
/// either used without credentials or by that same user.
async fn link_user<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    link: &str,
) -> Result<crate::auth::CurrentUser, Error> {
    let st = ApiState::of(req)?;
    let refused = || Error::Forbidden("The link is invalid or has expired.".into());
    let mut parts = link.splitn(3, '.');
    let (Some(expires), Some(user), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(refused());
    };
    let expires: i64 = expires.parse().map_err(|_| refused())?;
    let user = uuid::Uuid::parse_str(user).map_err(|_| refused())?;
    let key = req
        .match_info()
        .get(&shared.res_id_param)
        .unwrap_or_default();
    let file = req
        .match_info()
        .get(FILE_PARAM)
        .and_then(|v| uuid::Uuid::parse_str(v).ok())
        .ok_or_else(refused)?;
    let expected = link_signature(st, R::sql_table(), key, file, user, expires);
    let genuine: bool = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), sig.as_bytes()).into();
    if !genuine || expires < chrono::Utc::now().timestamp() {
        return Err(refused());
    }
    // Another user's credentials with the link: the link is not theirs.
    if let Some(caller) = crate::auth::current_user(req).await? {
        if caller.id != user {
            return Err(Error::Forbidden(
                "This link was made for another user.".into(),
            ));
        }
    }
    match crate::auth::load_user(&st.db, user).await? {
        Some(u) if u.is_enabled => Ok(u),
        _ => Err(refused()),
    }
}

/// A byte range a `Range` header asks for, within a file of `size` bytes: `Ok(None)` for the
/// whole file (no header, or one this server does not split: several ranges, other units),
/// `Err(())` for a range outside the file (416).
fn range(req: &HttpRequest, etag: &str, size: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    // `If-Range` with another tag (or a date) asks for the whole file.
    if let Some(if_range) = req.headers().get(header::IF_RANGE) {
        if if_range.as_bytes() != etag.as_bytes() {
            return Ok(None);
        }
    }
    let Some(spec) = spec.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (first, last) = (first.trim(), last.trim());
    let parsed = if first.is_empty() {
        // The last `n` bytes.
        let n: u64 = last.parse().map_err(|_| ())?;
        if n == 0 || size == 0 {
            return Err(());
        }
        (size.saturating_sub(n), size - 1)
    } else {
        let start: u64 = first.parse().map_err(|_| ())?;
        let end = if last.is_empty() {
            size.saturating_sub(1)
        } else {
            last.parse::<u64>()
                .map_err(|_| ())?
                .min(size.saturating_sub(1))
        };
        (start, end)
    };
    if parsed.0 >= size || parsed.0 > parsed.1 {
        return Err(());
    }
    Ok(Some(parsed))
}

/// Whether an `If-None-Match` header names `etag` (or `*`).
fn not_modified(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .map(|t| t.trim().trim_start_matches("W/"))
                .any(|t| t == etag || t == "*")
        })
}

/// The answer carrying `file`: its stored type, never sniffed, inline only for raster
/// images, in a sandbox that runs nothing.
async fn serve(
    st: &ApiState,
    req: &HttpRequest,
    table: &'static str,
    file: File,
) -> Result<HttpResponse, Error> {
    let etag = format!("\"{}\"", file.id.hyphenated());
    let inline = crudforge_core::files::media_type(&file.media_type).is_some_and(|m| m.inline);
    let disposition = format!(
        "{}; filename*=UTF-8''{}",
        if inline { "inline" } else { "attachment" },
        percent_encode(&file.name)
    );
    let answer = |status| {
        let mut b = HttpResponse::build(status);
        b.insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, "private, no-cache"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; sandbox; frame-ancestors 'none'",
            ))
            .insert_header((header::ACCEPT_RANGES, "bytes"));
        b
    };
    if not_modified(req, &etag) {
        return Ok(answer(actix_web::http::StatusCode::NOT_MODIFIED).finish());
    }
    let size = file.size;
    let (status, start, end) = match range(req, &etag, size) {
        Err(()) => {
            return Ok(answer(actix_web::http::StatusCode::RANGE_NOT_SATISFIABLE)
                .insert_header((header::CONTENT_RANGE, format!("bytes */{size}")))
                .finish());
        }
        Ok(Some((a, b))) => (actix_web::http::StatusCode::PARTIAL_CONTENT, a, b),
        Ok(None) => (actix_web::http::StatusCode::OK, 0, size.saturating_sub(1)),
    };
    let len = if size == 0 { 0 } else { end - start + 1 };
    let mut b = answer(status);
    b.insert_header((header::CONTENT_TYPE, file.media_type.clone()))
        .insert_header((header::CONTENT_DISPOSITION, disposition));
    if status == actix_web::http::StatusCode::PARTIAL_CONTENT {
        b.insert_header((header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}")));
    }
    // Small files in one read; larger ones streamed in chunks.
    let storage = st.files.clone();
    let id = file.id;
    if len <= READ_CHUNK as u64 {
        let bytes = storage.read(table, id, start, len as usize).await?;
        return Ok(b.body(bytes));
    }
    let chunks = futures_util::stream::try_unfold(
        (storage, start, start + len),
        move |(storage, at, stop)| async move {
            if at >= stop {
                return Ok(None);
            }
            let n = usize::try_from((stop - at).min(READ_CHUNK as u64)).unwrap_or(READ_CHUNK);
            let bytes = storage.read(table, id, at, n).await?;
            if bytes.is_empty() {
                return Err(Error::Internal(
                    "file storage: a stored file is shorter than recorded".into(),
                ));
            }
            let next = at + bytes.len() as u64;
            Ok(Some((web::Bytes::from(bytes), (storage, next, stop))))
        },
    );
    Ok(b.no_chunking(len).streaming(chunks))
}

/// `name` for `filename*=UTF-8''...` (RFC 8187): unreserved characters as they are, every other
/// byte percent-encoded.
fn percent_encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
