//! Editing a list of files (`FileList`) in an update: the ids a `PATCH` keeps (the member set
//! to a list of file ids) and the files its multipart parts add, applied in the write's
//! transaction to the list the row holds then (the update has locked the row), so that two
//! concurrent edits never leave a list naming a removed file.

use super::upload::{is_list, Uploaded};
use super::File;
use crate::error::Error;
use crate::field::FieldInfo;
use actix_web::HttpMessage as _;
use std::sync::{Arc, Mutex, PoisonError};

/// One list member's edit.
#[derive(Debug)]
pub(crate) struct ListEdit {
    /// The member.
    pub(crate) member: &'static str,
    /// The most files it holds.
    pub(crate) max_count: u32,
    /// The ids of the files it keeps, in their order (`None`: all it holds).
    pub(crate) keep: Option<Vec<uuid::Uuid>>,
    /// The uploaded files it gains, after those it keeps.
    pub(crate) added: Vec<File>,
}

/// The list edits of one update, and the files they took out of the row (removed from
/// storage once the update commits).
#[derive(Debug, Default)]
pub(crate) struct ListEdits {
    /// The edits, one per member.
    pub(crate) edits: Vec<ListEdit>,
    /// The ids of the files the committed edits took out.
    removed: Mutex<Vec<uuid::Uuid>>,
}

impl ListEdits {
    /// Takes the list members out of `obj` (a list of ids, which the update applies to the
    /// row's list; `null` stays: it empties the list as for a single file) and adds the
    /// uploaded files of list members; `None` when the update edits no list. The edits are
    /// also kept in the request, where [`ListEdits::of`] finds them after the write.
    ///
    /// # Errors
    ///
    /// 422 when a list member is neither `null` nor a list of distinct file ids.
    pub(crate) fn take(
        req: &actix_web::HttpRequest,
        fields: &[FieldInfo],
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<Option<Arc<ListEdits>>, Error> {
        let mut edits = Vec::new();
        for f in fields {
            let Some(max_count) = f.file.and_then(|r| r.max_count) else {
                continue;
            };
            let keep = match obj.get(f.name) {
                Some(serde_json::Value::Array(items)) => Some(ids(f.name, items)?),
                Some(serde_json::Value::Null) | None => None,
                Some(_) => {
                    return Err(Error::invalid_field(
                        f.name,
                        "is a list of files: send the ids of the files it keeps, or null to remove them all; upload new files as parts of this name",
                    ))
                }
            };
            if keep.is_some() {
                obj.remove(f.name);
            }
            edits.push(ListEdit {
                member: f.name,
                max_count,
                keep,
                added: Vec::new(),
            });
        }
        if let Some(Uploaded(files)) = req.extensions().get::<Uploaded>() {
            for (member, file) in files.iter().filter(|(m, _)| is_list(fields, m)) {
                if let Some(e) = edits.iter_mut().find(|e| e.member == *member) {
                    e.added.push(file.clone());
                }
            }
        }
        edits.retain(|e| e.keep.is_some() || !e.added.is_empty());
        if edits.is_empty() {
            return Ok(None);
        }
        let edits = Arc::new(ListEdits {
            edits,
            removed: Mutex::default(),
        });
        req.extensions_mut().insert(edits.clone());
        Ok(Some(edits))
    }

    /// The edits an update of `req` made, if any.
    pub(crate) fn of(req: &actix_web::HttpRequest) -> Option<Arc<ListEdits>> {
        req.extensions().get::<Arc<ListEdits>>().cloned()
    }

    /// The ids of the files the edits took out of the row.
    pub(crate) fn removed(&self) -> Vec<uuid::Uuid> {
        self.removed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records files the edits took out.
    pub(crate) fn note_removed(&self, ids: impl IntoIterator<Item = uuid::Uuid>) {
        self.removed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(ids);
    }
}

/// The ids of a keep list: distinct UUIDs.
fn ids(member: &str, items: &[serde_json::Value]) -> Result<Vec<uuid::Uuid>, Error> {
    let mut out: Vec<uuid::Uuid> = Vec::with_capacity(items.len());
    for item in items {
        let id = item
            .as_str()
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
            .ok_or_else(|| {
                Error::invalid_field(member, "lists the ids of the files it keeps (UUIDs)")
            })?;
        if out.contains(&id) {
            return Err(Error::invalid_field(member, format!("names {id} twice")));
        }
        out.push(id);
    }
    Ok(out)
}

impl ListEdit {
    /// The list after the edit, from the list the row holds (`current`), and the files it
    /// takes out.
    ///
    /// # Errors
    ///
    /// 422 when a kept id is not in the list, or the list would pass its `max_count`.
    pub(crate) fn apply(&self, current: Vec<File>) -> Result<(Vec<File>, Vec<File>), Error> {
        let (mut kept, dropped) = match &self.keep {
            None => (current, Vec::new()),
            Some(ids) => {
                let mut kept = Vec::with_capacity(ids.len());
                for id in ids {
                    let f = current.iter().find(|f| f.id == *id).ok_or_else(|| {
                        Error::invalid_field(self.member, format!("holds no file {id}"))
                    })?;
                    kept.push(f.clone());
                }
                let dropped = current
                    .into_iter()
                    .filter(|f| !ids.contains(&f.id))
                    .collect();
                (kept, dropped)
            }
        };
        kept.extend(self.added.iter().cloned());
        if kept.len() > self.max_count as usize {
            return Err(Error::invalid_field(
                self.member,
                format!(
                    "holds at most {} files; the update would leave {}",
                    self.max_count,
                    kept.len()
                ),
            ));
        }
        Ok((kept, dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: u128) -> File {
        File {
            id: uuid::Uuid::from_u128(n),
            name: format!("{n}.png"),
            size: 1,
            media_type: "image/png".into(),
        }
    }

    fn edit(keep: Option<Vec<u128>>, added: Vec<u128>) -> ListEdit {
        ListEdit {
            member: "album",
            max_count: 3,
            keep: keep.map(|k| k.into_iter().map(uuid::Uuid::from_u128).collect()),
            added: added.into_iter().map(file).collect(),
        }
    }

    #[test]
    fn keeping_reorders_drops_and_appends_within_the_bound() {
        let current = vec![file(1), file(2), file(3)];
        let (list, dropped) = edit(Some(vec![3, 1]), vec![4])
            .apply(current.clone())
            .unwrap();
        let ids: Vec<u128> = list.iter().map(|f| f.id.as_u128()).collect();
        assert_eq!(ids, [3, 1, 4]);
        assert_eq!(dropped, vec![file(2)]);
        let e = edit(None, vec![4]).apply(current.clone()).unwrap_err();
        assert!(e.to_string().contains("at most 3"), "{e}");
        let e = edit(Some(vec![9]), vec![]).apply(current).unwrap_err();
        assert!(e.to_string().contains("holds no file"), "{e}");
    }

    #[test]
    fn a_keep_list_is_distinct_uuids() {
        let a = serde_json::json!(uuid::Uuid::from_u128(1));
        assert!(ids("album", &[a.clone(), a.clone()]).is_err());
        assert!(ids("album", &[serde_json::json!("x")]).is_err());
        assert_eq!(ids("album", &[a]).unwrap().len(), 1);
    }
}
