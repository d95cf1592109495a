//! The parameters of an aggregate request: `group_by`, the metrics (`count_distinct`, `sum`,
//! `avg`, `min`, `max`), `sort`, `page` and `page_size`, taken out of the query string so that
//! what remains is judged as a list request's filters.
//!
//! A member is usable when the resource lets aggregates use it so ([`Generated::AGGREGATES`](crate::crud::Generated::AGGREGATES))
//! and the caller reads it on every row; any other name, hidden or unknown, gets the same 400,
//! which lists only the members the caller may use.

use super::{AggregateUse, Group, Key, Member, Metric, Spec, Trunc, MAX_GROUP_BY, MAX_METRICS};
use crate::config::Config;
use crate::crud::query::Params;
use crate::crud::rules::read::{reads_every_row, Viewer};
use crate::crud::{Kind, Resource};
use crate::error::Error;

/// List parameters that mean nothing for groups: refused rather than ignored.
const REFUSED: [&str; 4] = ["fields", "expand", "cursor", "count"];

/// Takes the aggregate parameters out of `params` and reads them for `viewer`.
///
/// # Errors
///
/// A 400 naming the parameter: a list parameter an aggregate has no use for, an unknown or
/// unusable member, a truncation of a member that is not a timestamp, a member grouped twice,
/// too many groups or metrics, a bad `sort`, `page` or `page_size`.
pub(crate) fn take<R: Resource>(
    params: &mut Params,
    config: &Config,
    viewer: Viewer<'_>,
) -> Result<Spec, Error> {
    for name in REFUSED {
        if params.get(name).is_some() {
            return Err(Error::bad_param(
                name,
                "not a parameter of an aggregate (`group_by`, `count_distinct`, `sum`, `avg`, \
                 `min`, `max`, `sort`, `page`, `page_size` and the list's filters are)",
            ));
        }
    }
    let groups = match params.take("group_by") {
        Some(v) => group_by::<R>(&v, viewer)?,
        None => Vec::new(),
    };
    let mut metrics = Vec::new();
    for metric in Metric::ALL {
        let Some(v) = params.take(metric.param()) else {
            continue;
        };
        for name in names(&v) {
            let member = usable::<R>(metric.param(), metric.flag(), name, viewer)?;
            if !metrics
                .iter()
                .any(|(m, x): &(Metric, Member)| *m == metric && x.field.name == name)
            {
                metrics.push((metric, member));
            }
        }
    }
    if metrics.len() > MAX_METRICS {
        return Err(Error::bad_param(
            metrics.last().map_or("sum", |(m, _)| m.param()),
            format!("at most {MAX_METRICS} metrics per request"),
        ));
    }
    let max = config.list.aggregate_max_groups;
    let page = match params.take("page") {
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|p| *p >= 1)
            .ok_or_else(|| Error::bad_param("page", "expected a whole number from 1 up"))?,
        None => 1,
    };
    let page_size = match params.take("page_size") {
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|p| (1..=max).contains(p))
            .ok_or_else(|| {
                Error::bad_param(
                    "page_size",
                    format!("expected a whole number from 1 to {max} (groups per page)"),
                )
            })?,
        None => max.min(100),
    };
    let mut spec = Spec {
        groups,
        metrics,
        sort: Vec::new(),
        page,
        page_size,
    };
    if let Some(v) = params.take("sort") {
        spec.sort = sort(&spec, &v)?;
    }
    Ok(spec)
}

/// The non-empty names of a comma-separated list.
fn names(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The members `viewer` may use with `flag`.
fn allowed<R: Resource>(flag: u8, viewer: Viewer<'_>) -> Vec<&'static str> {
    R::AGGREGATES
        .iter()
        .filter(|(name, _, uses)| uses.has(flag) && reads_every_row::<R>(name, viewer))
        .map(|(name, _, _)| *name)
        .collect()
}

/// The member `name` of `param`, if `viewer` may use it with `flag`; else the one 400 of an
/// unknown member, whatever the reason.
fn usable<R: Resource>(
    param: &str,
    flag: u8,
    name: &str,
    viewer: Viewer<'_>,
) -> Result<Member, Error> {
    let found = R::AGGREGATES
        .iter()
        .find(|(n, _, uses)| *n == name && uses.has(flag))
        .filter(|(n, _, _)| reads_every_row::<R>(n, viewer))
        .and_then(|(n, column, _)| R::field(n).map(|field| Member { field, column }));
    found.ok_or_else(|| {
        let ok = allowed::<R>(flag, viewer);
        let list = if ok.is_empty() {
            "none".to_owned()
        } else {
            ok.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Error::bad_param(
            param,
            format!("unknown member `{name}`; `{param}` takes: {list}"),
        )
    })
}

/// Reads `group_by`: members, a timestamp optionally with `:hour`, `:day`, `:week` or
/// `:month`.
fn group_by<R: Resource>(v: &str, viewer: Viewer<'_>) -> Result<Vec<Group>, Error> {
    let mut out: Vec<Group> = Vec::new();
    for part in names(v) {
        let (name, trunc) = match part.split_once(':') {
            Some((n, t)) => (n.trim(), Some(t.trim())),
            None => (part, None),
        };
        let member = usable::<R>("group_by", AggregateUse::GROUP_BY, name, viewer)?;
        let trunc = match trunc {
            None => None,
            Some(t) => {
                if member.field.kind != Kind::DateTime {
                    return Err(Error::bad_param(
                        "group_by",
                        format!(
                            "`{name}` is not a timestamp: only timestamps are truncated (`:{t}`)"
                        ),
                    ));
                }
                Some(Trunc::parse(t).ok_or_else(|| {
                    Error::bad_param(
                        "group_by",
                        format!(
                            "unknown truncation `{t}`; expected one of {}",
                            Trunc::NAMES.join(", ")
                        ),
                    )
                })?)
            }
        };
        if out.iter().any(|g| g.member.field.name == name) {
            return Err(Error::bad_param(
                "group_by",
                format!("`{name}` is grouped by twice"),
            ));
        }
        out.push(Group { member, trunc });
    }
    if out.len() > MAX_GROUP_BY {
        return Err(Error::bad_param(
            "group_by",
            format!("at most {MAX_GROUP_BY} members per request"),
        ));
    }
    Ok(out)
}

/// Reads `sort`: keys of the answer (a grouped member, `count`, a metric's key such as
/// `avg_price`), each optionally with `-` (descending).
fn sort(spec: &Spec, v: &str) -> Result<Vec<(Key, bool)>, Error> {
    let mut out = Vec::new();
    for part in names(v) {
        let (desc, name) = match part.strip_prefix('-') {
            Some(n) => (true, n),
            None => (false, part.strip_prefix('+').unwrap_or(part)),
        };
        let key = if name == "count" {
            Some(Key::Count)
        } else {
            spec.groups
                .iter()
                .position(|g| g.member.field.name == name)
                .map(Key::Group)
                .or_else(|| {
                    (0..spec.metrics.len())
                        .find(|i| spec.metric_key(*i) == name)
                        .map(Key::Metric)
                })
        };
        let key = key.ok_or_else(|| {
            Error::bad_param(
                "sort",
                format!(
                    "cannot sort by `{name}`: sort by a grouped member, `count` or a metric \
                     the request asks for (`sum_<member>`, ...)"
                ),
            )
        })?;
        out.push((key, desc));
    }
    Ok(out)
}
