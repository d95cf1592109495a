//! Aggregates (`CrudBlueprint::aggregates`): `GET <prefix>aggregate/` groups the rows a caller
//! could list by members (a timestamp also truncated to an hour, day, ISO week or month) and
//! answers counts, distinct counts, sums, averages, minimums and maximums per group.
//!
//! The request is judged as the list's: the caller must be allowed to list, and every list
//! filter, the `filter` expression, named filters, the parent parameters and the caller's read
//! scope select the rows first ([`crate::crud::list`]). Which members may be grouped or
//! aggregated how is the derive's decision ([`Generated::AGGREGATES`](crate::crud::Generated::AGGREGATES)); a member the caller does
//! not read on every row is refused exactly as an unknown one. The parameters are read in
//! [`parse`]; the one query (a JSON array per group, so that no row type depends on the
//! request) is written and run in [`sql`], under its own time bound (`AGGREGATE_TIMEOUT`).

pub(crate) mod parse;
pub(crate) mod sql;

use crate::crud::list::{conditions, judged_query};
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::shared::Shared;
use crate::crud::view::json;
use crate::crud::{FieldInfo, Resource};
use crate::db::snapshot;
use crate::error::Error;
use crate::perms::Door;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};

/// The path of the aggregate route under a blueprint's prefix. With its final `/` it never
/// takes the place of an item whose key is `aggregate`.
pub(crate) const PATH: &str = "aggregate/";

/// The most members one request may group by.
pub(crate) const MAX_GROUP_BY: usize = 5;
/// The most metrics (besides `count`) one request may ask for.
pub(crate) const MAX_METRICS: usize = 20;

/// What a member may be used for in an aggregate: a set of [`AggregateUse`] flags, decided by
/// the derive from the member's type or its `#[resource(aggregate(...))]`. Generated.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateUse(pub u8);

impl AggregateUse {
    /// `group_by` (a timestamp: also truncated).
    pub const GROUP_BY: u8 = 1;
    /// `count_distinct`.
    pub const COUNT_DISTINCT: u8 = 2;
    /// `sum`.
    pub const SUM: u8 = 4;
    /// `avg`.
    pub const AVG: u8 = 8;
    /// `min`.
    pub const MIN: u8 = 16;
    /// `max`.
    pub const MAX: u8 = 32;

    /// Whether the flag `bit` is set.
    pub(crate) const fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// A metric computed per group (besides `count`, always answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metric {
    CountDistinct,
    Sum,
    Avg,
    Min,
    Max,
}

impl Metric {
    /// Every metric, in the order of their parameters.
    pub(crate) const ALL: [Metric; 5] = [
        Metric::CountDistinct,
        Metric::Sum,
        Metric::Avg,
        Metric::Min,
        Metric::Max,
    ];

    /// The query parameter naming the metric's members, and the prefix of its answer's keys
    /// (`sum_price`).
    pub(crate) const fn param(self) -> &'static str {
        match self {
            Metric::CountDistinct => "count_distinct",
            Metric::Sum => "sum",
            Metric::Avg => "avg",
            Metric::Min => "min",
            Metric::Max => "max",
        }
    }

    /// The [`AggregateUse`] flag a member needs for the metric.
    pub(crate) const fn flag(self) -> u8 {
        match self {
            Metric::CountDistinct => AggregateUse::COUNT_DISTINCT,
            Metric::Sum => AggregateUse::SUM,
            Metric::Avg => AggregateUse::AVG,
            Metric::Min => AggregateUse::MIN,
            Metric::Max => AggregateUse::MAX,
        }
    }
}

/// How a timestamp group is truncated (`created_at:day`); weeks start on Monday (ISO), all in
/// UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trunc {
    Hour,
    Day,
    Week,
    Month,
}

impl Trunc {
    /// Every truncation, as `group_by` writes it after `:`.
    pub(crate) const NAMES: [&'static str; 4] = ["hour", "day", "week", "month"];

    pub(crate) fn parse(s: &str) -> Option<Trunc> {
        match s {
            "hour" => Some(Trunc::Hour),
            "day" => Some(Trunc::Day),
            "week" => Some(Trunc::Week),
            "month" => Some(Trunc::Month),
            _ => None,
        }
    }
}

/// A member the request uses: its metadata and its column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member {
    pub(crate) field: &'static FieldInfo,
    pub(crate) column: &'static str,
}

/// One group key of the answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group {
    pub(crate) member: Member,
    pub(crate) trunc: Option<Trunc>,
}

/// What an aggregate sorts its groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// The group key at this index.
    Group(usize),
    /// `count`.
    Count,
    /// The metric at this index.
    Metric(usize),
}

/// A parsed aggregate request: its groups, metrics, order and page of groups.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) groups: Vec<Group>,
    pub(crate) metrics: Vec<(Metric, Member)>,
    /// Sort keys (`true`: descending), before the groups' own order.
    pub(crate) sort: Vec<(Key, bool)>,
    pub(crate) page: u32,
    pub(crate) page_size: u32,
}

impl Spec {
    /// The answer's key of the metric at `i` (`sum_price`).
    pub(crate) fn metric_key(&self, i: usize) -> String {
        let (m, member) = self.metrics[i];
        format!("{}_{}", m.param(), member.field.name)
    }
}

/// `GET <prefix>aggregate/`: the groups of the rows the caller could list, with their metrics.
pub(crate) async fn aggregate<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let limit = std::time::Duration::from_secs(st.config.list.aggregate_timeout);
    let (spec, rows) = snapshot::read(&st.db, async |conn| {
        let (who, gated) =
            relations::rules::at_door(shared, &req, Operation::Index, Door::Aggregate, Some(conn))
                .await?;
        let mut params = Params::of(req.query_string())?;
        // The caller's scope first: an anonymous caller the rules refuse gets 401 before any
        // other parameter is judged.
        let rows = who.rows_read::<R>(&params)?;
        let spec = parse::take::<R>(&mut params, &st.config, who.viewer())?;
        let scope = gated.read_scope(&who, shared, &req, rows)?;
        let (mut q, _) = judged_query(shared, &params, st, who.viewer())?;
        let conds = conditions(shared, &req, &params, conn, scope, &mut q, who.viewer()).await?;
        let rows = sql::run::<R>(conn, &spec, &conds, limit).await?;
        Ok((spec, rows))
    })
    .await?;
    let body = sql::answer(&spec, rows)?;
    Ok(json(actix_web::http::StatusCode::OK, body))
}
