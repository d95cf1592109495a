//! The blueprint's aggregates (`aggregates`): the builder call, its checks at mount time and
//! the route `GET <prefix>aggregate/` (see `crud::aggregate`).

use super::{CrudBlueprint, Mounted, Operation};
use crate::crud::aggregate::{self, AggregateUse, Metric};
use crate::crud::Resource;
use actix_web::web;

impl<R: Resource> CrudBlueprint<R> {
    /// Offers aggregates: `GET <prefix>aggregate/` groups the rows the caller could list
    /// (`group_by=species,created_at:day`) and answers per group `count` and the metrics asked
    /// for (`count_distinct`, `sum`, `avg`, `min`, `max`, each a list of members), after every
    /// list filter, the `filter` expression, named filters and the caller's read scope. Its
    /// permission is INDEX's, which must be mounted. Which members may be used how is the
    /// derive's decision (`#[resource(aggregate(...))]`); see [aggregates.md](https://github.com/crudforge/crudforge/blob/main/docs/aggregates.md). Off by
    /// default.
    #[must_use]
    pub fn aggregates(mut self) -> Self {
        self.aggregates = true;
        self
    }

    /// Aggregates need INDEX (their caller and scope), and no member named like an answer's
    /// metric key (`count`, `sum_price`), which a group key would collide with.
    pub(super) fn check_aggregates(&mut self) {
        if !self.aggregates {
            return;
        }
        if !self.ops.contains_key(&Operation::Index) {
            self.errors.push(format!(
                "{}: aggregates (`aggregates()`) need the INDEX operation",
                self.prefix
            ));
        }
        let groupable = R::AGGREGATES
            .iter()
            .filter(|(_, _, u)| u.has(AggregateUse::GROUP_BY));
        for (name, _, _) in groupable {
            let clash = *name == "count"
                || Metric::ALL.iter().any(|m| {
                    R::AGGREGATES.iter().any(|(other, _, u)| {
                        u.has(m.flag()) && *name == format!("{}_{other}", m.param())
                    })
                });
            if clash {
                self.errors.push(format!(
                    "{}: the member `{name}` of {} is named like a key of the aggregate answer; \
                     opt it out with `#[resource(aggregate(none))]` or rename it",
                    self.prefix,
                    R::NAME
                ));
            }
        }
    }
}

impl<R: Resource> Mounted<R> {
    /// `GET <prefix>aggregate/`, when the blueprint offers aggregates.
    pub(super) fn aggregate_routes(&self, routes: &mut crate::crud::scope::Routes) {
        if !self.aggregates {
            return;
        }
        let path = format!("{}{}", self.prefix, aggregate::PATH);
        routes.add(&path, |r| {
            r.route(web::get().to(handler!(
                self.shared,
                crate::crud::limits::At::Door(crate::perms::Door::Aggregate),
                aggregate::aggregate
            )))
        });
    }
}
