//! The state every part of a mounted blueprint reads: what the handlers need per request
//! ([`Shared`]) and what the OpenAPI description needs ([`Mounted`]). The blueprint builds
//! them; the handlers and `docs` only read them, so the arrows point one way.

use super::{FieldInfo, Resource};
use crate::crud::hooks::Hooks;
use crate::crud::idempotency::InFlight;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::route::CustomRoute;
use crate::crud::scope::Patterns;
use crate::perms::Rules;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The parts handlers need, shared by every worker.
pub(crate) struct Shared<R: Resource> {
    pub(crate) rules: Arc<dyn Rules<R>>,
    pub(crate) ops: BTreeMap<Operation, OpOptions<R>>,
    pub(crate) parents: Vec<(&'static FieldInfo, String)>,
    pub(crate) res_id: &'static FieldInfo,
    pub(crate) res_id_param: String,
    pub(crate) hooks: Hooks<R>,
    pub(crate) require_if_match: bool,
    pub(crate) in_flight: InFlight,
    /// The blueprint's feed, when it offers one (`CrudBlueprint::events`).
    #[cfg(feature = "realtime")]
    pub(crate) feed: Option<Arc<crate::crud::feed::Feed<R>>>,
}

/// A `true`/`false` query parameter of one operation that a hook reads
/// ([`HookCtx::flag`](super::HookCtx::flag)): its operation, name and description.
pub(crate) type QueryFlag = (Operation, &'static str, &'static str);

/// A mounted blueprint.
pub(crate) struct Mounted<R: Resource> {
    pub(crate) shared: Arc<Shared<R>>,
    pub(crate) prefix: String,
    pub(crate) item_path: String,
    pub(crate) custom: Vec<CustomRoute>,
    /// Query flags that hooks read, documented on their operation.
    pub(crate) flags: Vec<QueryFlag>,
    /// The operations whose batch form is mounted.
    pub(crate) batch: Vec<Operation>,
    /// Whether `GET <prefix>aggregate/` is mounted.
    pub(crate) aggregates: bool,
    /// The routes' patterns for their scope's guard, compiled by the first worker.
    pub(crate) patterns: Patterns,
    /// The admin page's hints for the resource (`x-admin` on its list operation).
    #[cfg(feature = "admin")]
    pub(crate) admin: AdminView,
    /// Whether `GET <prefix>export/` is mounted.
    #[cfg(feature = "export")]
    pub(crate) export: bool,
    /// Whether `POST <prefix>import/` is mounted.
    #[cfg(feature = "export")]
    pub(crate) import: bool,
}

/// What a blueprint tells the admin page about its resource: the name it shows, the members
/// its list shows by default (in order), and members' labels.
#[cfg(feature = "admin")]
#[derive(Debug, Clone, Default)]
pub(crate) struct AdminView {
    /// The resource's label.
    pub(crate) label: Option<String>,
    /// The list's columns.
    pub(crate) columns: Vec<&'static str>,
    /// Members' labels.
    pub(crate) labels: BTreeMap<&'static str, String>,
}

#[cfg(feature = "admin")]
impl AdminView {
    /// The `x-admin` value, or `None` when the blueprint chose nothing.
    pub(crate) fn extension(&self) -> Option<serde_json::Value> {
        if self.label.is_none() && self.columns.is_empty() && self.labels.is_empty() {
            return None;
        }
        let mut out = serde_json::Map::new();
        if let Some(label) = &self.label {
            out.insert("label".into(), label.clone().into());
        }
        if !self.columns.is_empty() {
            out.insert("columns".into(), self.columns.clone().into());
        }
        if !self.labels.is_empty() {
            let labels = self
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(v.clone())))
                .collect();
            out.insert("labels".into(), serde_json::Value::Object(labels));
        }
        Some(serde_json::Value::Object(out))
    }
}
