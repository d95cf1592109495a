//! The blueprint's `webhooks()` and what it adds: the change capture of its writes (the
//! events a feed reads, recorded in each write's transaction) without the feed's routes, and
//! the face through which subscriptions find the resource and its item's path.

use crate::crud::options::{OpOptions, Operation};
use crate::crud::shared::Part;
use crate::crud::FieldInfo;
use crate::crud::{CrudBlueprint, Resource};
use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;

impl<R: Resource> CrudBlueprint<R> {
    /// Lets webhook subscriptions name this resource (the `webhooks` feature): every write
    /// through this blueprint, and the command line's, records its events in its own
    /// transaction (the change capture a feed reads, `events()`), and a subscription
    /// (`Api::webhook`) sends each event's row as its principal's `GET` of the row shows it.
    /// See [webhooks.md](https://github.com/crudforge/crudforge/blob/main/docs/webhooks.md).
    /// Needs GET, and a prefix without parent parameters.
    #[must_use]
    pub fn webhooks(mut self) -> Self {
        self.parts.entry(crate::realtime::capture::<R>);
        self.parts.entry(|| Subscribable::<R> {
            hooked: Hooked {
                table: R::sql_table(),
                item: String::new(),
            },
            _of: PhantomData,
        });
        self
    }
}

/// What a blueprint that webhooks may name shows the whole API.
pub(crate) struct Hooked {
    /// The resource's table, by which a subscription names it.
    pub(crate) table: &'static str,
    /// The path of its items, without the id (`/api/critters/`), set when it is mounted.
    pub(crate) item: String,
}

/// The part `webhooks()` adds.
struct Subscribable<R> {
    hooked: Hooked,
    _of: PhantomData<fn() -> R>,
}

impl<R: Resource> Part<R> for Subscribable<R> {
    /// A subscription reads rows through the item's `GET`, whose path has no parameter but
    /// the id.
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        if !ops.contains_key(&Operation::Get) {
            errors.push(format!(
                "{prefix}: webhooks (`webhooks()`) need the GET operation"
            ));
        }
        if prefix.contains('{') {
            errors.push(format!(
                "{prefix}: webhooks (`webhooks()`) need a prefix without parent parameters"
            ));
        }
    }

    fn mounted(&mut self, prefix: &str, _res_id: &'static FieldInfo) {
        prefix.clone_into(&mut self.hooked.item);
    }

    fn faces(&self) -> Vec<&(dyn Any + Send + Sync)> {
        vec![&self.hooked]
    }
}
