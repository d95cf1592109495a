//! The routes of file members (the `files` feature): multipart creates and updates, the
//! item's writes that remove the files they replace, and the download and link routes.

use super::{Mounted, Operation};
use crate::crud::files;
use crate::crud::Resource;
use actix_web::{guard, web, HttpRequest};

/// An actix handler that runs the generic handler `$f`, which reads the body as a stream, with
/// the blueprint's shared state.
macro_rules! stream_handler {
    ($shared:expr, $f:path) => {{
        let shared = $shared.clone();
        move |req: HttpRequest, body: web::Payload| {
            let shared = shared.clone();
            async move { $f(&*shared, req, body).await }
        }
    }};
}

impl<R: Resource> Mounted<R> {
    /// The multipart create on the list's path, on a resource with file members.
    pub(super) fn file_list_routes(&self, list: actix_web::Resource) -> actix_web::Resource {
        if !self.shared.ops.contains_key(&Operation::Post) || !files::has_files::<R>() {
            return list;
        }
        list.route(
            web::post()
                .guard(guard::fn_guard(files::is_multipart))
                .to(stream_handler!(self.shared, files::create)),
        )
    }

    /// The item's writes on a resource with file members (uploads, and removing the files a
    /// write replaces), after its GET.
    pub(super) fn file_item_routes(&self, mut item: actix_web::Resource) -> actix_web::Resource {
        let ops = &self.shared.ops;
        if ops.contains_key(&Operation::Patch) {
            item = item
                .route(
                    web::patch()
                        .guard(guard::fn_guard(files::is_multipart))
                        .to(stream_handler!(self.shared, files::update_multipart)),
                )
                .route(web::patch().to(handler!(self.shared, files::update)));
        }
        if ops.contains_key(&Operation::Delete) {
            item = item.route(web::delete().to(handler!(self.shared, files::delete)));
        }
        item
    }

    /// The download route of a resource's files, when GET is enabled.
    pub(super) fn file_routes(&self, routes: &mut crate::crud::scope::Routes) {
        if !files::has_files::<R>() || !self.shared.ops.contains_key(&Operation::Get) {
            return;
        }
        let path = format!(
            "{}/{}/{{{}}}",
            self.item_path,
            files::SEGMENT,
            files::FILE_PARAM
        );
        routes.add(&format!("{path}/link"), |r| {
            r.route(web::post().to(handler!(self.shared, files::link)))
        });
        routes.add(&path, |r| {
            r.route(web::get().to(handler!(self.shared, files::download)))
        });
    }
}
