//! The part a resource with file members gets (the `files` feature), added by the crate root
//! for every such resource: the thumbnails check, the multipart creates and updates, the
//! item's writes that remove the files they replace, the download and link routes, their
//! description, and the tables and ids the orphan sweep and the purge read.

use super::handlers;
use super::lists::ListEdits;
use crate::crud::limits::At;
use crate::crud::mount::blueprint::handler;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::scope::Routes;
use crate::crud::shared::{Mounted, Part, Parts, Route, Shared};
use crate::crud::{FieldInfo, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::openapi::ApiDoc;
use crate::perms::Door;
use actix_web::{guard, web, HttpRequest};
use apistos::paths::RequestBody;
use apistos::reference_or::ReferenceOr;
use futures_util::future::LocalBoxFuture;
use schemars::schema::Schema;
use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// An actix handler that runs the generic handler `$f`, which reads the body as a stream, with
/// the blueprint's shared state, under the limit of route `$at`, if any.
macro_rules! stream_handler {
    ($shared:expr, $at:expr, $f:path) => {{
        let shared = $shared.clone();
        move |req: HttpRequest, body: web::Payload| {
            let shared = shared.clone();
            async move {
                crate::crud::limits::limited!(&shared, &req, $at, $f(&*shared, req.clone(), body))
            }
        }
    }};
}

/// Adds the file members' part to a new blueprint of `R`, when `R` has file members.
pub(crate) fn add<R: Resource>(parts: &mut Parts<R>) {
    if handlers::has_files::<R>() {
        parts.entry(FileMembers::<R>::new);
    }
}

/// Lists the ids of the files a resource's rows hold.
pub(crate) type Referenced =
    for<'a> fn(&'a mut Conn) -> LocalBoxFuture<'a, Result<Vec<uuid::Uuid>, Error>>;

/// What the orphan sweep and the purge read of a mounted resource with file members: its
/// table and how to list the ids of the files its rows hold.
pub(crate) struct FileTable {
    /// The resource's table.
    pub(crate) table: &'static str,
    /// The ids of the files its rows hold.
    pub(crate) referenced: Referenced,
}

/// The part of a resource with file members.
pub(crate) struct FileMembers<R> {
    face: FileTable,
    _resource: PhantomData<fn() -> R>,
}

impl<R: Resource> FileMembers<R> {
    fn new() -> Self {
        FileMembers {
            face: FileTable {
                table: R::sql_table(),
                referenced: |conn| Box::pin(handlers::referenced::<R>(conn)),
            },
            _resource: PhantomData,
        }
    }
}

impl<R: Resource> Part<R> for FileMembers<R> {
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        let _ = (prefix, ops, &errors);
        #[cfg(not(feature = "thumbnails"))]
        if let Some(f) = R::FIELDS
            .iter()
            .find(|f| f.file.is_some_and(|r| !r.thumbs.is_empty()))
        {
            errors.push(format!(
                "{prefix}: `{}` declares thumbnails, which need crudforge's `thumbnails` feature",
                f.name
            ));
        }
    }

    /// The files' URLs are made from the prefix and the field that names a row.
    fn mounted(&mut self, prefix: &str, res_id: &'static FieldInfo) {
        super::register_mount(std::any::TypeId::of::<R>(), prefix, res_id.name);
    }

    /// The multipart create before the JSON one; the item's writes wholly (uploads, and
    /// removing the files a write replaces), and the batch delete's.
    fn serve(
        &self,
        m: &Mounted<R>,
        route: Route,
        resource: actix_web::Resource,
    ) -> (actix_web::Resource, bool) {
        match route {
            Route::Create => (
                resource.route(
                    web::post()
                        .guard(guard::fn_guard(handlers::is_multipart))
                        .to(stream_handler!(
                            m.shared,
                            At::Op(Operation::Post),
                            handlers::create
                        )),
                ),
                false,
            ),
            Route::Update => (
                resource
                    .route(
                        web::patch()
                            .guard(guard::fn_guard(handlers::is_multipart))
                            .to(stream_handler!(
                                m.shared,
                                At::Op(Operation::Patch),
                                handlers::update_multipart
                            )),
                    )
                    .route(web::patch().to(handler!(
                        m.shared,
                        At::Op(Operation::Patch),
                        handlers::update
                    ))),
                true,
            ),
            Route::Delete => (
                resource.route(web::delete().to(handler!(
                    m.shared,
                    At::Op(Operation::Patch),
                    handlers::delete
                ))),
                true,
            ),
            Route::BatchDelete => (
                resource.route(web::post().to(handler!(
                    m.shared,
                    At::Op(Operation::Patch),
                    handlers::delete_batch
                ))),
                true,
            ),
        }
    }

    /// The download route of a resource's files and its link, when GET is enabled.
    fn late_routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        if !m.shared.ops.contains_key(&Operation::Get) {
            return;
        }
        let path = format!(
            "{}/{}/{{{}}}",
            m.item_path,
            handlers::SEGMENT,
            handlers::FILE_PARAM
        );
        routes.add(&format!("{path}/link"), |r| {
            r.route(web::post().to(handler!(m.shared, At::Door(Door::Download), handlers::link)))
        });
        routes.add(&path, |r| {
            r.route(web::get().to(handler!(
                m.shared,
                At::Door(Door::Download),
                handlers::download
            )))
        });
    }

    /// A list's edits (the ids it keeps, and its new uploads) leave the body, to be applied
    /// to the lists the row holds once the update has locked it.
    fn take_members(
        &self,
        req: &HttpRequest,
        op: Operation,
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<bool, Error> {
        if op != Operation::Patch {
            return Ok(false);
        }
        Ok(ListEdits::take(req, R::FIELDS, obj)?.is_some())
    }

    /// The uploaded files' metadata, as the members' values.
    fn add_members(
        &self,
        req: &HttpRequest,
        op: Operation,
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        super::upload::merge(req, obj, R::FIELDS, op == Operation::Post);
    }

    fn after_update<'a>(
        &'a self,
        shared: &'a Shared<R>,
        req: &'a HttpRequest,
        conn: &'a mut Conn,
        item: R,
    ) -> LocalBoxFuture<'a, Result<R, Error>> {
        Box::pin(async move {
            match ListEdits::of(req) {
                Some(lists) => edit_lists(shared, req, conn, item, &lists).await,
                None => Ok(item),
            }
        })
    }

    fn write_body(
        &self,
        _op: Operation,
        body: &mut ReferenceOr<RequestBody>,
        input: &ReferenceOr<Schema>,
    ) {
        super::docs::with_uploads::<R>(body, input.clone());
    }

    fn document(&self, m: &Mounted<R>, doc: &mut ApiDoc) {
        super::docs::document(doc, m);
    }

    fn faces(&self) -> Vec<&(dyn Any + Send + Sync)> {
        vec![&self.face]
    }
}

/// In the transaction, after the update (which holds the row's lock): applies the list edits
/// to the lists the row holds now and writes them, addressing the row by its key alone (the
/// update passed the rules); notes the files they took out.
async fn edit_lists<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    conn: &mut Conn,
    item: R,
    lists: &ListEdits,
) -> Result<R, Error> {
    let current = serde_json::to_value(R::Response::from(item))
        .map_err(|e| Error::Internal(format!("rendering a row: {e}")))?;
    let mut set = serde_json::Map::new();
    let mut removed = Vec::new();
    for edit in &lists.edits {
        let holds = current
            .get(edit.member)
            .map(crate::files::files_in)
            .unwrap_or_default();
        let (list, dropped) = edit.apply(holds)?;
        removed.extend(dropped.iter().map(|f| f.id));
        let value = if list.is_empty() {
            serde_json::Value::Null
        } else {
            crate::files::FileList(list).to_json()
        };
        set.insert(edit.member.to_owned(), value);
    }
    let input: R::Update = serde_json::from_value(serde_json::Value::Object(set))
        .map_err(|e| Error::Internal(format!("a file list's update: {e}")))?;
    let conds = crate::condition::Condition::from(crate::crud::request::item_conds(shared, req)?);
    let item = R::update(conn, &conds, input)
        .await?
        .ok_or_else(|| Error::Internal("the updated row is gone".into()))?;
    lists.note_removed(removed);
    Ok(item)
}
