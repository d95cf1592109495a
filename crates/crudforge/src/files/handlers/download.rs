//! `GET <item>/files/<file id>`: a file (or its thumbnail) to a caller who may read the row and
//! the member, with its stored type, `nosniff`, a sandboxing CSP, `ETag`, conditional and
//! range requests.

use super::link::{link_param, link_user};
use super::readable_file;
use crate::crud::shared::Shared;
use crate::crud::Resource;
use crate::error::Error;
use crate::files::File;
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

/// The bytes read from storage per chunk of a download.
const READ_CHUNK: usize = 256 * 1024;

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
/// (on the blocking pool) and kept: by one request at a time (the others wait and serve what
/// it kept), within the API's bound on decodes (503 past it).
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
    let storage = super::super::storage_of(st)?;
    let bytes = match storage.thumb(table, file.id, size).await? {
        Some(kept) => kept,
        None => make_thumb(st, table, file, size).await?,
    };
    Ok(answer(actix_web::http::StatusCode::OK)
        .insert_header((header::CONTENT_TYPE, media_type))
        .insert_header((header::CONTENT_DISPOSITION, "inline"))
        .body(bytes))
}

/// Makes and keeps the thumbnail of `file` in box `size`, or serves the one a request before
/// made while this one waited its turn.
#[cfg(feature = "thumbnails")]
async fn make_thumb(
    st: &ApiState,
    table: &'static str,
    file: &File,
    size: (u32, u32),
) -> Result<Vec<u8>, Error> {
    use crate::files::thumbs::{decodes_busy, Flight, DECODE};
    use crate::places::{self, Holder, Place};
    let storage = super::super::storage_of(st)?;
    let flight = Flight::join((table, file.id, size));
    let _turn = flight.turn().await;
    if let Some(kept) = storage.thumb(table, file.id, size).await? {
        return Ok(kept);
    }
    let max = st.config.ops.files_thumb_max_decodes;
    let _place =
        Place::take(places::api_of(st), DECODE, Holder::All, max).ok_or_else(decodes_busy)?;
    let len = usize::try_from(file.size)
        .map_err(|_| Error::Internal("a stored file larger than memory".into()))?;
    let source = storage.read(table, file.id, 0, len).await?;
    let source_type = file.media_type.clone();
    tracing::debug!(table, file = %file.id, width = size.0, height = size.1, "making a thumbnail");
    let made = web::block(move || crate::files::thumbs::make(&source, &source_type, size))
        .await
        .map_err(|e| Error::Internal(format!("making a thumbnail: {e}")))??;
    storage
        .keep_thumb(table, file.id, size, made.clone())
        .await?;
    Ok(made)
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
    let storage = super::super::storage_of(st)?.clone();
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
