//! The blueprint's export and import (feature `export`): `export()` mounts
//! `GET <prefix>export/` (the list as CSV or NDJSON, streamed), `import()` mounts
//! `POST <prefix>import/` (a CSV or NDJSON file through the batch create's path). See
//! [data.md](https://github.com/crudforge/crudforge/blob/main/docs/data.md).

use super::{import, stream, EXPORT_PATH, IMPORT_PATH};
use crate::crud::limits::At;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::scope::Routes;
use crate::crud::shared::{Mounted, Part};
use crate::crud::{CrudBlueprint, Resource};
use crate::openapi::ApiDoc;
use crate::perms::Door;
use actix_web::{web, HttpRequest};
use std::collections::BTreeMap;

/// What a blueprint offers of export and import.
#[derive(Debug, Default)]
pub(crate) struct Data {
    /// Whether `GET <prefix>export/` is mounted.
    pub(crate) export: bool,
    /// Whether `POST <prefix>import/` is mounted.
    pub(crate) import: bool,
}

impl<R: Resource> CrudBlueprint<R> {
    /// Mounts `GET <prefix>export/`: every item the caller may list, as CSV (`format=csv`, or
    /// `Accept: text/csv`; the default) or NDJSON (`format=ndjson`, or
    /// `Accept: application/x-ndjson`), with the list's filters, `filter`, `scope`, `sort`
    /// and `fields`, judged as INDEX judges them; streamed from the database in chunks of
    /// `EXPORT_CHUNK_ROWS` rows. Needs INDEX.
    #[must_use]
    pub fn export(mut self) -> Self {
        self.parts.entry(Data::default).export = true;
        self
    }

    /// Mounts `POST <prefix>import/`: a CSV (`text/csv`, a header row of member names) or
    /// NDJSON (`application/x-ndjson`) file whose rows are created as the batch create creates
    /// its items, all or nothing (or chunk by chunk with `mode=chunked`), within
    /// `IMPORT_MAX_BYTES` and `IMPORT_MAX_ROWS`. Needs POST.
    #[must_use]
    pub fn import(mut self) -> Self {
        self.parts.entry(Data::default).import = true;
        self
    }
}

impl<R: Resource> Part<R> for Data {
    /// An export needs INDEX (its caller, scope and rendering), an import POST.
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        if self.export && !ops.contains_key(&Operation::Index) {
            errors.push(format!(
                "{prefix}: an export (`export()`) needs the INDEX operation"
            ));
        }
        if self.import && !ops.contains_key(&Operation::Post) {
            errors.push(format!(
                "{prefix}: an import (`import()`) needs the POST operation"
            ));
        }
    }

    /// The export and import routes, when the blueprint offers them.
    fn routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        if self.export {
            let shared = m.shared.clone();
            routes.add(&format!("{}{EXPORT_PATH}", m.prefix), |r| {
                r.route(web::get().to(move |req: HttpRequest| {
                    let shared = shared.clone();
                    async move {
                        let at = At::Door(Door::Export);
                        crate::crud::limits::limited!(
                            &shared,
                            &req,
                            at,
                            stream::export(shared.clone(), req.clone())
                        )
                    }
                }))
            });
        }
        if self.import {
            let shared = m.shared.clone();
            routes.add(&format!("{}{IMPORT_PATH}", m.prefix), |r| {
                r.route(
                    web::post().to(move |req: HttpRequest, payload: web::Payload| {
                        let shared = shared.clone();
                        async move {
                            let at = At::Door(Door::Import);
                            crate::crud::limits::limited!(
                                &shared,
                                &req,
                                at,
                                import::import(shared.clone(), req.clone(), payload)
                            )
                        }
                    }),
                )
            });
        }
    }

    fn document(&self, m: &Mounted<R>, doc: &mut ApiDoc) {
        super::docs::document(doc, m, self.export, self.import);
    }
}
