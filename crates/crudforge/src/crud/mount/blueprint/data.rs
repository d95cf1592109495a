//! The blueprint's export and import (feature `export`): `export()` mounts
//! `GET <prefix>export/` (the list as CSV or NDJSON, streamed), `import()` mounts
//! `POST <prefix>import/` (a CSV or NDJSON file through the batch create's path). See
//! [data.md](https://github.com/crudforge/crudforge/blob/main/docs/data.md).

use super::{CrudBlueprint, Operation};
use crate::crud::data::{export, import, EXPORT_PATH, IMPORT_PATH};
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use actix_web::{web, HttpRequest};

impl<R: Resource> CrudBlueprint<R> {
    /// Mounts `GET <prefix>export/`: every item the caller may list, as CSV (`format=csv`, or
    /// `Accept: text/csv`; the default) or NDJSON (`format=ndjson`, or
    /// `Accept: application/x-ndjson`), with the list's filters, `filter`, `scope`, `sort`
    /// and `fields`, judged as INDEX judges them; streamed from the database in chunks of
    /// `EXPORT_CHUNK_ROWS` rows. Needs INDEX.
    #[must_use]
    pub fn export(mut self) -> Self {
        self.export = true;
        self
    }

    /// Mounts `POST <prefix>import/`: a CSV (`text/csv`, a header row of member names) or
    /// NDJSON (`application/x-ndjson`) file whose rows are created as the batch create creates
    /// its items, all or nothing (or chunk by chunk with `mode=chunked`), within
    /// `IMPORT_MAX_BYTES` and `IMPORT_MAX_ROWS`. Needs POST.
    #[must_use]
    pub fn import(mut self) -> Self {
        self.import = true;
        self
    }

    /// An export needs INDEX (its caller, scope and rendering), an import POST.
    pub(super) fn check_data(&mut self) {
        if self.export && !self.ops.contains_key(&Operation::Index) {
            self.errors.push(format!(
                "{}: an export (`export()`) needs the INDEX operation",
                self.prefix
            ));
        }
        if self.import && !self.ops.contains_key(&Operation::Post) {
            self.errors.push(format!(
                "{}: an import (`import()`) needs the POST operation",
                self.prefix
            ));
        }
    }
}

impl<R: Resource> Mounted<R> {
    /// The export and import routes, when the blueprint offers them.
    pub(super) fn data_routes(&self, routes: &mut crate::crud::scope::Routes) {
        if self.export {
            let shared = self.shared.clone();
            routes.add(&format!("{}{EXPORT_PATH}", self.prefix), |r| {
                r.route(web::get().to(move |req: HttpRequest| {
                    let shared = shared.clone();
                    async move { export::export(shared, req).await }
                }))
            });
        }
        if self.import {
            let shared = self.shared.clone();
            routes.add(&format!("{}{IMPORT_PATH}", self.prefix), |r| {
                r.route(
                    web::post().to(move |req: HttpRequest, payload: web::Payload| {
                        let shared = shared.clone();
                        async move { import::import(shared, req, payload).await }
                    }),
                )
            });
        }
    }
}
