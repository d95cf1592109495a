//! Limits per operation and per door ([`CrudBlueprint::limit`](crate::CrudBlueprint::limit)):
//! how much a caller may ask of one operation (or door) of a resource in a window, each request
//! weighted by its cost, answered past it with 429, `Retry-After` and the `RateLimit` /
//! `RateLimit-Policy` headers. Windows are fixed and aligned to the clock (a one-minute window
//! starts at each whole minute), so every instance agrees on them. On SQLite the process counts;
//! on PostgreSQL the instances share one count per key in the table `crudforge_limits`, each
//! instance leasing a share of the budget at a time ([`store`]).
//!
//! Every generated route enters through [`limited!`], which first labels the request with what
//! it addresses (`Shared::address`): the resource and the action that an API key's scope is
//! judged against when the caller is authenticated.

mod docs;
mod store;

pub(crate) use docs::document;

use crate::auth::key_scope::Action;
use crate::crud::options::Operation;
use crate::error::Error;
use crate::perms::Door;
use actix_web::http::header::{HeaderName, HeaderValue};

/// The `RateLimit-Policy` header: the limit (`"<policy>";q=<units>;w=<seconds>`).
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// The `RateLimit` header: what is left (`"<policy>";r=<units>;t=<seconds>`).
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use std::time::Duration;

/// How much a caller may ask of one operation or door in a window: `max` units per window,
/// each request costing one unit or more (see [`Limit::cost`]).
///
/// ```
/// use crudforge::limits::{Limit, LimitKey};
///
/// // 600 units a minute per caller: 600 pages of the default size (25), or 150 of 100.
/// let lists = Limit::per_minute(600);
/// // 200 units an hour per client address: ten exports, which cost 20 each.
/// let exports = Limit::per_hour(200).by(LimitKey::Address);
/// # let _ = (lists, exports);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub(crate) max: u32,
    pub(crate) window: u64,
    pub(crate) key: LimitKey,
    pub(crate) cost: Option<u32>,
}

impl Limit {
    /// `max` units per `window` (at least one second; whole seconds).
    pub fn new(max: u32, window: Duration) -> Limit {
        Limit {
            max,
            window: window.as_secs().max(1),
            key: LimitKey::Caller,
            cost: None,
        }
    }

    /// `max` units per second.
    pub fn per_second(max: u32) -> Limit {
        Limit::new(max, Duration::from_secs(1))
    }

    /// `max` units per minute.
    pub fn per_minute(max: u32) -> Limit {
        Limit::new(max, Duration::from_secs(60))
    }

    /// `max` units per hour.
    pub fn per_hour(max: u32) -> Limit {
        Limit::new(max, Duration::from_secs(3600))
    }

    /// `max` units per day.
    pub fn per_day(max: u32) -> Limit {
        Limit::new(max, Duration::from_secs(86_400))
    }

    /// Whose requests count together (by default [`LimitKey::Caller`]).
    #[must_use]
    pub fn by(mut self, key: LimitKey) -> Limit {
        self.key = key;
        self
    }

    /// What every request costs, in units, instead of the default: one for most requests; a
    /// list page one per `DEFAULT_PAGE_SIZE` items it asks (`page_size`; a page of the default
    /// size costs one); an aggregate 5; a batch write, an export or an import 20.
    #[must_use]
    pub fn cost(mut self, units: u32) -> Limit {
        self.cost = Some(units.max(1));
        self
    }
}

/// Whose requests a [`Limit`] counts together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LimitKey {
    /// The signed-in user; an anonymous caller by their client address.
    #[default]
    Caller,
    /// The client address (an IPv6 address by its /64; behind `TRUSTED_PROXIES`, the address
    /// `X-Forwarded-For` names), signed in or not.
    Address,
}

impl LimitKey {
    /// How the description names the key.
    fn words(self) -> &'static str {
        match self {
            LimitKey::Caller => "per signed-in user (an anonymous caller per client address)",
            LimitKey::Address => "per client address",
        }
    }
}

/// What a [`Limit`] applies to: a generated operation (its batch form too) or a door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// An operation (`GET` of the list or an item, `POST`, `PATCH`, `DELETE`, restore); its
    /// batch form counts against it too.
    Operation(Operation),
    /// A door (the export, the import, aggregates, the feed, downloads).
    Door(Door),
}

impl From<Operation> for Limited {
    fn from(op: Operation) -> Limited {
        Limited::Operation(op)
    }
}

impl From<Door> for Limited {
    fn from(door: Door) -> Limited {
        Limited::Door(door)
    }
}

impl Limited {
    /// The policy's name in the headers and the description (`index`, `export`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Limited::Operation(op) => match op {
                Operation::Index => "index",
                Operation::Get => "get",
                Operation::Post => "post",
                Operation::Patch => "patch",
                Operation::Delete => "delete",
                Operation::Restore => "restore",
            },
            Limited::Door(door) => door.name(),
        }
    }
}

/// A route a limit may count, as the handlers are bound: what it counts against and what a
/// request costs by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// A single operation.
    Op(Operation),
    /// The batch form of an operation.
    Batch(Operation),
    /// A door.
    Door(Door),
}

impl At {
    /// What a request to the route does to its resource, as a key's scope names it: the
    /// reads, the feed, the export, aggregates and downloads read; an import creates; a
    /// restore updates; a batch does what its operation does.
    pub(crate) fn action(self) -> Action {
        match self {
            At::Op(op) | At::Batch(op) => match op {
                Operation::Index | Operation::Get => Action::Read,
                Operation::Post => Action::Create,
                Operation::Patch | Operation::Restore => Action::Update,
                Operation::Delete => Action::Delete,
            },
            At::Door(Door::Import) => Action::Create,
            At::Door(
                Door::Export | Door::Aggregate | Door::Feed | Door::Download | Door::History,
            ) => Action::Read,
        }
    }

    fn limited(self) -> Limited {
        match self {
            At::Op(op) | At::Batch(op) => Limited::Operation(op),
            At::Door(door) => Limited::Door(door),
        }
    }

    /// What a request costs by default when that does not depend on the request: every route
    /// but a list page (`None`), which costs by its size ([`At::cost`]).
    pub(crate) fn fixed_cost(self) -> Option<u32> {
        match self {
            At::Op(Operation::Index) => None,
            At::Op(_) | At::Door(Door::Feed | Door::Download | Door::History) => Some(1),
            At::Door(Door::Aggregate) => Some(5),
            At::Batch(_) | At::Door(Door::Export | Door::Import) => Some(20),
        }
    }

    /// What a request costs by default.
    fn cost(self, req: &HttpRequest) -> u32 {
        self.fixed_cost().unwrap_or_else(|| {
            // A size past the largest allowed is the list's 400, counted as the largest.
            let (unit, max) = crate::state::ApiState::of(req).map_or((25, 100), |st| {
                (
                    st.config.list.default_page_size,
                    st.config.list.max_page_size,
                )
            });
            page_size(req.query_string())
                .min(max)
                .div_ceil(unit.max(1))
                .max(1)
        })
    }
}

/// The `page_size` a query string asks for (0 when it asks none or it does not parse: the
/// list's own checks answer that).
fn page_size(query: &str) -> u32 {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("page_size="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The limits of one blueprint, each with its count.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    counters: Vec<(Limited, store::Counter)>,
}

impl Limits {
    /// The limits given to the blueprint at `prefix` (the last one given for a target counts).
    pub(crate) fn new(prefix: &str, given: &[(Limited, Limit)]) -> Limits {
        let mut counters: Vec<(Limited, store::Counter)> = Vec::new();
        for (on, limit) in given {
            counters.retain(|(o, _)| o != on);
            let scope = format!("{prefix}|{}", on.name());
            counters.push((*on, store::Counter::new(scope, on.name(), *limit)));
        }
        Limits { counters }
    }

    /// The limit on `on`, if any.
    pub(crate) fn get(&self, on: Limited) -> Option<&Limit> {
        self.counter(on).map(store::Counter::limit)
    }

    fn counter(&self, on: Limited) -> Option<&store::Counter> {
        self.counters.iter().find(|(o, _)| *o == on).map(|(_, c)| c)
    }
}

/// What the limit on a route decided for one request, before its handler runs.
pub(crate) enum Admission {
    /// No limit on the route.
    Free,
    /// Counted: the handler runs, and its answer gets the headers ([`Headers::add`]).
    Counted(Headers),
    /// Past the limit: this 429 is the answer, and the handler does not run.
    Refused(HttpResponse),
}

/// The `RateLimit` / `RateLimit-Policy` headers of one answer.
pub(crate) struct Headers {
    policy: Option<HeaderValue>,
    left: Option<HeaderValue>,
}

impl Headers {
    /// `answer` (the handler's; an error becomes its response) with the headers.
    ///
    /// # Errors
    ///
    /// None: the handler's error is rendered here.
    pub(crate) fn add(self, answer: Result<HttpResponse, Error>) -> Result<HttpResponse, Error> {
        let mut res = answer.unwrap_or_else(|e| e.error_response());
        self.put(&mut res);
        Ok(res)
    }

    fn put(self, res: &mut HttpResponse) {
        let headers = res.headers_mut();
        if let Some(policy) = self.policy {
            headers.insert(RATELIMIT_POLICY, policy);
        }
        if let Some(left) = self.left {
            headers.insert(RATELIMIT, left);
        }
    }
}

/// Counts a request to the route `at` against its limit, if it has one. The handler's future
/// is made only after this (the `handler!` macro calls it, then the handler), so that it is
/// never moved: a handler's future is large, and moving it cost more than the count.
///
/// # Errors
///
/// Database errors of the count (PostgreSQL).
pub(crate) async fn admit(limits: &Limits, req: &HttpRequest, at: At) -> Result<Admission, Error> {
    let Some(counter) = limits.counter(at.limited()) else {
        return Ok(Admission::Free);
    };
    let limit = counter.limit();
    let cost = limit.cost.unwrap_or_else(|| at.cost(req));
    let verdict = counter.admit(req, cost).await?;
    let headers = Headers {
        policy: counter.policy().cloned(),
        left: HeaderValue::try_from(format!(
            "\"{}\";r={};t={}",
            at.limited().name(),
            verdict.remaining,
            verdict.reset
        ))
        .ok(),
    };
    if verdict.admitted {
        return Ok(Admission::Counted(headers));
    }
    crate::metrics::global().throttled();
    let e = Error::TooManyRequests {
        detail: format!(
            "Too many requests: at most {} per {} s; try again in {} s.",
            limit.max, limit.window, verdict.reset
        )
        .into(),
        retry_after: verdict.reset,
    };
    // With `Retry-After`.
    let mut res = e.error_response();
    headers.put(&mut res);
    Ok(Admission::Refused(res))
}

/// Runs `$handler` (an expression that makes the handler's future, evaluated only when the
/// request is admitted) under the limit of route `$at` of the blueprint whose shared state is
/// `$shared` (an `&Arc<Shared<R>>`), for request `$req`. Every generated route enters here:
/// the request is first labelled with what it addresses (`Shared::address`).
macro_rules! limited {
    ($shared:expr, $req:expr, $at:expr, $handler:expr) => {{
        let shared = $shared;
        shared.address($req, $at);
        match $crate::crud::limits::admit(&shared.limits, $req, $at).await? {
            $crate::crud::limits::Admission::Free => $handler.await,
            $crate::crud::limits::Admission::Refused(res) => Ok(res),
            $crate::crud::limits::Admission::Counted(headers) => headers.add($handler.await),
        }
    }};
}
pub(crate) use limited;

/// What a limit decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Whether the request may run.
    pub(crate) admitted: bool,
    /// Units left in the window (as this instance knows them).
    pub(crate) remaining: u64,
    /// Seconds until the window ends.
    pub(crate) reset: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_pages_cost_by_their_size() {
        assert_eq!(page_size("page_size=100&sort=name"), 100);
        assert_eq!(page_size("sort=name&page_size=7"), 7);
        assert_eq!(page_size("page_size=x"), 0);
        assert_eq!(page_size(""), 0);
        // Without an API, the default page size is 25.
        let req = actix_web::test::TestRequest::get()
            .uri("/api/x/?page_size=100")
            .to_http_request();
        assert_eq!(At::Op(Operation::Index).cost(&req), 4);
        let req = actix_web::test::TestRequest::get()
            .uri("/api/x/?page_size=26")
            .to_http_request();
        assert_eq!(At::Op(Operation::Index).cost(&req), 2);
        // Past the largest page (100 without an API), the cost of the largest.
        let req = actix_web::test::TestRequest::get()
            .uri("/api/x/?page_size=100000")
            .to_http_request();
        assert_eq!(At::Op(Operation::Index).cost(&req), 4);
        let req = actix_web::test::TestRequest::get()
            .uri("/api/x/")
            .to_http_request();
        assert_eq!(At::Op(Operation::Index).cost(&req), 1);
        assert_eq!(At::Door(Door::Export).cost(&req), 20);
        assert_eq!(At::Batch(Operation::Post).cost(&req), 20);
        assert_eq!(At::Op(Operation::Get).cost(&req), 1);
    }

    #[test]
    fn the_last_limit_given_for_a_target_counts() {
        let limits = Limits::new(
            "/api/x/",
            &[
                (Operation::Index.into(), Limit::per_minute(5)),
                (Door::Export.into(), Limit::per_hour(2)),
                (Operation::Index.into(), Limit::per_minute(9)),
            ],
        );
        assert_eq!(limits.get(Operation::Index.into()).map(|l| l.max), Some(9));
        assert_eq!(
            limits.get(Door::Export.into()).map(|l| l.window),
            Some(3600)
        );
        assert!(limits.get(Operation::Get.into()).is_none());
    }
}
