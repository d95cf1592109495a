//! Reading a `multipart/form-data` body: an optional part named `data` holds the other
//! members as one JSON object; each other part is named after a file member and holds its file
//! (a list member's name may repeat, up to its `max_count`).
//! A file is stored as it arrives (never held whole in memory): its media type is recognized
//! from its first bytes (the `infer` crate) before anything is kept, and it is refused with 413
//! as soon as it passes its member's size. A refused or failed upload leaves nothing stored.

use super::storage::Storage;
use super::File;
use crate::error::Error;
use crate::field::{FieldInfo, FileRule};
use actix_web::http::header::HeaderMap;
use futures_util::StreamExt as _;

/// The bytes the media type is recognized from (the longest signature `infer` reads is well
/// within this).
const SNIFF: usize = 8 * 1024;

/// Bytes gathered before one write to the disk.
const WRITE_CHUNK: usize = 256 * 1024;

/// The name of the part holding the other members as JSON.
pub(crate) const DATA_PART: &str = "data";

/// What a multipart body held: the JSON of the other members and the files it stored.
pub(crate) struct Uploads {
    /// The `data` part (`{}` without one).
    pub(crate) data: Vec<u8>,
    /// Each stored file with its member.
    pub(crate) files: Vec<(&'static str, File)>,
    /// The table the files belong to.
    pub(crate) table: &'static str,
}

impl Uploads {
    /// The files' (table, id), for removal.
    pub(crate) fn stored(&self) -> Vec<(&'static str, uuid::Uuid)> {
        self.files.iter().map(|(_, f)| (self.table, f.id)).collect()
    }
}

/// The files a multipart body stored, in the request's extensions while the create or update
/// it hands on runs: [`merge`] puts them in its body.
pub(crate) struct Uploaded(pub(crate) std::sync::Arc<Vec<(&'static str, File)>>);

/// Puts the uploaded files' metadata into `obj` (after the client's members were checked:
/// only an upload sets a file member). A list member's files make its list on create; on
/// update they are added to the list the row holds, in the write's transaction
/// (`files::lists::ListEdits`), so they are left out here.
pub(crate) fn merge(
    req: &actix_web::HttpRequest,
    obj: &mut serde_json::Map<String, serde_json::Value>,
    fields: &[FieldInfo],
    creating: bool,
) {
    use actix_web::HttpMessage as _;
    if let Some(Uploaded(files)) = req.extensions().get::<Uploaded>() {
        for (member, file) in files.iter() {
            if !is_list(fields, member) {
                obj.insert((*member).to_owned(), file.to_json());
            } else if creating {
                let list = obj
                    .entry((*member).to_owned())
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let serde_json::Value::Array(items) = list {
                    items.push(file.to_json());
                }
            }
        }
    }
}

/// Whether `member` is a list of files.
pub(crate) fn is_list(fields: &[FieldInfo], member: &str) -> bool {
    fields
        .iter()
        .find(|f| f.name == member)
        .and_then(|f| f.file)
        .is_some_and(|r| r.max_count.is_some())
}

/// Removes the files stored so far when dropped before being disarmed.
struct Cleanup<'a> {
    storage: &'a Storage,
    table: &'static str,
    ids: Vec<uuid::Uuid>,
}

impl Cleanup<'_> {
    async fn run(self) {
        let files: Vec<_> = self.ids.iter().map(|id| (self.table, *id)).collect();
        self.storage.remove_all(&files).await;
    }
}

/// A client's file name as shown to users: without any folder part (`/` or `\`), control
/// characters or quotes, at most 255 characters; `file` when nothing is left.
pub(crate) fn sanitize_name(raw: &str) -> String {
    let last = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control() && *c != '"')
        .take(255)
        .collect();
    let clean = clean.trim().trim_start_matches('.').to_owned();
    if clean.is_empty() {
        "file".to_owned()
    } else {
        clean
    }
}

/// The media type of `head` (a file's first bytes), when one of `rule`'s.
fn recognize(member: &str, rule: &FileRule, head: &[u8]) -> Result<&'static str, Error> {
    let found = infer::get(head).map(|t| t.mime_type());
    let accepted = rule.types.join(", ");
    match found {
        Some(t) => rule
            .types
            .iter()
            .find(|a| a.eq_ignore_ascii_case(t))
            .copied()
            .ok_or_else(|| {
                Error::invalid_field(member, format!("the file is {t}; accepted: {accepted}"))
            }),
        None => Err(Error::invalid_field(
            member,
            format!("the file's content is not of a recognized type; accepted: {accepted}"),
        )),
    }
}

/// Refuses a body whose declared length passes what the members could hold.
fn check_length(headers: &HeaderMap, fields: &[FieldInfo], json_limit: usize) -> Result<(), Error> {
    let declared = headers
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let room: u64 = fields
        .iter()
        .filter_map(|f| f.file)
        .map(|r| {
            r.max_size
                .saturating_mul(u64::from(r.max_count.unwrap_or(1)))
        })
        .fold(0u64, u64::saturating_add)
        .saturating_add(json_limit as u64)
        // The parts' headers and boundaries.
        .saturating_add(64 * 1024);
    match declared {
        Some(n) if n > room => Err(Error::PayloadTooLarge(
            format!("The request body ({n} bytes) is larger than its files and members may be.")
                .into(),
        )),
        _ => Ok(()),
    }
}

/// Reads a multipart body, storing its files in `storage` under `table`.
///
/// # Errors
///
/// 413 past a file's size (or the body's), 422 for a refused type, an unknown or repeated
/// part, 400 for a malformed body; storage errors. Nothing stays stored after an error.
pub(crate) async fn read(
    headers: &HeaderMap,
    payload: actix_web::web::Payload,
    fields: &'static [FieldInfo],
    table: &'static str,
    storage: &Storage,
    json_limit: usize,
) -> Result<Uploads, Error> {
    check_length(headers, fields, json_limit)?;
    let mut cleanup = Cleanup {
        storage,
        table,
        ids: Vec::new(),
    };
    let mut out = Uploads {
        data: b"{}".to_vec(),
        files: Vec::new(),
        table,
    };
    let read = read_parts(
        headers,
        payload,
        fields,
        storage,
        json_limit,
        &mut out,
        &mut cleanup,
    )
    .await;
    match read {
        Ok(()) => Ok(out),
        Err(e) => {
            cleanup.run().await;
            Err(e)
        }
    }
}

fn malformed(e: &actix_multipart::MultipartError) -> Error {
    Error::BadRequest {
        detail: format!("The multipart body is malformed: {e}"),
        field: None,
    }
}

async fn read_parts(
    headers: &HeaderMap,
    payload: actix_web::web::Payload,
    fields: &'static [FieldInfo],
    storage: &Storage,
    json_limit: usize,
    out: &mut Uploads,
    cleanup: &mut Cleanup<'_>,
) -> Result<(), Error> {
    let mut parts = actix_multipart::Multipart::new(headers, payload);
    let mut seen_data = false;
    while let Some(part) = parts.next().await {
        let mut part = part.map_err(|e| malformed(&e))?;
        let name = part.name().unwrap_or_default().to_owned();
        if name == DATA_PART {
            if seen_data {
                return Err(Error::invalid_field(DATA_PART, "is sent twice"));
            }
            seen_data = true;
            let mut data = Vec::new();
            while let Some(chunk) = part.next().await {
                let chunk = chunk.map_err(|e| malformed(&e))?;
                if data.len() + chunk.len() > json_limit {
                    return Err(Error::PayloadTooLarge(
                        "The `data` part is larger than the service accepts.".into(),
                    ));
                }
                data.extend_from_slice(&chunk);
            }
            out.data = data;
            continue;
        }
        let Some((field, rule)) = fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.file.map(|r| (f, r)))
        else {
            return Err(Error::Validation {
                detail: format!(
                    "Unknown part `{name}`: a multipart body holds `data` (the other members as JSON) and one part per file member."
                ),
                field: Some(name),
            });
        };
        let sent = out.files.iter().filter(|(m, _)| *m == field.name).count();
        match rule.max_count {
            None if sent > 0 => return Err(Error::invalid_field(field.name, "is sent twice")),
            Some(most) if sent >= most as usize => {
                return Err(Error::invalid_field(
                    field.name,
                    format!("holds at most {most} files"),
                ))
            }
            _ => {}
        }
        let file_name = part
            .content_disposition()
            .and_then(|cd| cd.get_filename())
            .map_or_else(|| "file".to_owned(), sanitize_name);
        let file = store_part(
            &mut part, field.name, &rule, file_name, storage, out.table, cleanup,
        )
        .await?;
        out.files.push((field.name, file));
    }
    Ok(())
}

/// Stores one file part: recognized from its first bytes, refused past its size.
async fn store_part(
    part: &mut actix_multipart::Field,
    member: &'static str,
    rule: &FileRule,
    name: String,
    storage: &Storage,
    table: &'static str,
    cleanup: &mut Cleanup<'_>,
) -> Result<File, Error> {
    let too_large = || {
        Error::PayloadTooLarge(
            format!("`{member}` is larger than its {} bytes.", rule.max_size).into(),
        )
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut size: u64 = 0;
    let mut media_type: Option<&'static str> = None;
    let mut writing = None;
    loop {
        let chunk = match part.next().await {
            Some(c) => Some(c.map_err(|e| malformed(&e))?),
            None => None,
        };
        let ended = chunk.is_none();
        if let Some(chunk) = chunk {
            size += chunk.len() as u64;
            if size > rule.max_size {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        if media_type.is_none() && (buf.len() >= SNIFF || ended) {
            if buf.is_empty() {
                return Err(Error::invalid_field(member, "the file is empty"));
            }
            media_type = Some(recognize(member, rule, &buf)?);
            let id = uuid::Uuid::new_v4();
            writing = Some((id, storage.create(table, id).await?));
        }
        if let Some((_, w)) = writing.as_mut() {
            if buf.len() >= WRITE_CHUNK || (ended && !buf.is_empty()) {
                w.write(std::mem::take(&mut buf)).await?;
            }
        }
        if ended {
            break;
        }
    }
    let (Some(media_type), Some((id, w))) = (media_type, writing) else {
        return Err(Error::invalid_field(member, "the file is empty"));
    };
    w.finish().await?;
    cleanup.ids.push(id);
    Ok(File {
        id,
        name,
        size,
        media_type: media_type.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_folders_and_control_characters() {
        assert_eq!(sanitize_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_name("C:\\Users\\x\\cat.png"), "cat.png");
        assert_eq!(sanitize_name("a\u{0}b\r\n.png"), "ab.png");
        assert_eq!(sanitize_name("../"), "file");
        assert_eq!(sanitize_name(".htaccess"), "htaccess");
        assert_eq!(sanitize_name(&"x".repeat(400)).len(), 255);
    }

    #[test]
    fn content_decides_the_type() {
        let rule = FileRule {
            max_size: 10,
            types: &["image/png"],
            thumbs: &[],
            max_count: None,
        };
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(recognize("photo", &rule, png).unwrap(), "image/png");
        let html = b"<html><script>alert(1)</script></html>";
        assert!(recognize("photo", &rule, html).is_err());
        let gif = b"GIF89a\x01\0\x01\0";
        let e = recognize("photo", &rule, gif).unwrap_err();
        assert!(e.to_string().contains("image/gif"), "{e}");
    }
}
