//! The administrators' HTTP API for webhooks (`Api::webhooks_api`): the subscriptions listed
//! with their state, a subscription's messages listed (its dead letters among them), an
//! endpoint enabled again, a replay from an event or a time, one message sent again. Every
//! route is for administrators only.

use super::{store, DeliveryStatus, Sub};
use crate::crud::CustomRoute;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where the webhooks' HTTP API is mounted ([`crate::Api::webhooks_api`]).
pub(crate) struct Mounted(pub(crate) String);

/// The tag of the operations in the description.
const TAG: &str = "Webhooks";

/// Who may call every route, for the description.
const CALLERS: &str = "administrators only";

/// Messages listed when the query names no `limit`, and the most one listing gives.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 500;

/// A subscription as the listing answers it (never its secrets).
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct WebhookView {
    /// Its name.
    name: String,
    /// Its endpoint.
    url: String,
    /// The resources' tables it reads.
    resources: Vec<String>,
    /// The kinds of events it sends (empty: all).
    events: Vec<String>,
    /// The e-mail address of the user the rows are read as.
    principal: String,
    /// Whether its endpoint is sent to (`true` before its first look).
    enabled: bool,
    /// Why not.
    reason: Option<String>,
    /// Messages waiting to be sent.
    waiting: i64,
}

/// The subscriptions.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct WebhookList {
    /// In the order they were declared.
    items: Vec<WebhookView>,
}

/// A subscription's messages.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct DeliveryList {
    /// Newest first.
    items: Vec<super::Delivery>,
}

/// What a replay or a redelivery changed.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Requeued {
    /// Messages to be sent again.
    requeued: u64,
}

/// Where a replay starts: one of the two.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReplayBody {
    /// The messages of this event and those after it (the number in `webhook-id`).
    from_event: Option<i64>,
    /// The messages made at this time or later (RFC 3339).
    since: Option<DateTime<Utc>>,
}

/// The listing's query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    status: Option<String>,
    limit: Option<u32>,
}

/// The routes of the webhooks' API, relative to its prefix.
pub(crate) fn routes(subs: &Arc<Vec<Arc<Sub>>>) -> Vec<CustomRoute> {
    let with = |subs: &Arc<Vec<Arc<Sub>>>| Arc::clone(subs);
    let (a, b, c, d) = (with(subs), with(subs), with(subs), with(subs));
    vec![
        CustomRoute::new(OperationType::Get, "", move || {
            let subs = Arc::clone(&a);
            web::get().to(move |req: HttpRequest| {
                let subs = Arc::clone(&subs);
                async move { list(req, &subs).await }
            })
        })
        .operation_id("listWebhooks")
        .summary("List the webhook subscriptions and their state")
        .responds::<WebhookList>()
        .errors(&[401, 403])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Get, "{name}/deliveries/", move || {
            let subs = Arc::clone(&b);
            web::get().to(move |req: HttpRequest, name: web::Path<String>| {
                let subs = Arc::clone(&subs);
                async move { deliveries(req, &subs, &name).await }
            })
        })
        .operation_id("listWebhookDeliveries")
        .summary("List a subscription's messages, newest first (`status=dead`: its dead letters)")
        .responds::<DeliveryList>()
        .errors(&[400, 401, 403, 404])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Post, "{name}/enable/", move || {
            let subs = Arc::clone(&c);
            web::post().to(move |req: HttpRequest, name: web::Path<String>| {
                let subs = Arc::clone(&subs);
                async move { enable(req, &subs, &name).await }
            })
        })
        .operation_id("enableWebhook")
        .summary("Enable a subscription's endpoint again, its failures forgotten")
        .responds::<WebhookView>()
        .errors(&[401, 403, 404])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Post, "{name}/replay/", move || {
            let subs = Arc::clone(&d);
            web::post().to(
                move |req: HttpRequest, name: web::Path<String>, body: web::Bytes| {
                    let subs = Arc::clone(&subs);
                    async move { replay(req, &subs, &name, &body).await }
                },
            )
        })
        .operation_id("replayWebhook")
        .summary("Send again a subscription's delivered and dead messages from an event or a time")
        .body::<ReplayBody>()
        .responds::<Requeued>()
        .errors(&[401, 403, 404, 422])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Post, "deliveries/{id}/redeliver/", || {
            web::post().to(redeliver)
        })
        .operation_id("redeliverWebhookMessage")
        .summary("Send one delivered or dead message again, with its own webhook-id")
        .responds::<Requeued>()
        .errors(&[401, 403, 404])
        .callers(CALLERS)
        .tag(TAG),
    ]
}

/// Adds the routes under `prefix` to the description.
pub(crate) fn document(doc: &mut crate::openapi::ApiDoc, prefix: &str) {
    let routes = routes(&Arc::default());
    crate::crud::mount::docs::custom::document_routes(doc, prefix, TAG, &routes);
}

/// The API's state when the caller is an administrator: 401 without a token, 403 for
/// another user.
async fn administrator(req: &HttpRequest) -> Result<&ApiState, Error> {
    let st = ApiState::of(req)?;
    let user = crate::auth::require_user(req).await?;
    if !user.is_admin() {
        return Err(Error::Forbidden(
            "Only an administrator manages the webhooks.".into(),
        ));
    }
    Ok(st)
}

/// Subscription `name`; 404 when none has it.
fn named<'a>(subs: &'a [Arc<Sub>], name: &str) -> Result<&'a Sub, Error> {
    subs.iter()
        .find(|s| s.name == name)
        .map(AsRef::as_ref)
        .ok_or_else(|| Error::NotFound(format!("No webhook subscription {name:?}.").into()))
}

/// What the listing says of `sub`.
async fn view(st: &ApiState, sub: &Sub) -> Result<WebhookView, Error> {
    let state = store::state(&st.db, &sub.name).await?;
    let mut conn = st.db.get().await?;
    let waiting = store::waiting(&mut conn, &sub.name).await?;
    Ok(WebhookView {
        name: sub.name.clone(),
        url: sub.url.to_string(),
        resources: sub.resources.iter().map(|(t, _)| (*t).to_owned()).collect(),
        events: sub.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
        principal: sub.principal.clone(),
        enabled: state.as_ref().is_none_or(|s| s.enabled),
        reason: state.and_then(|s| s.reason),
        waiting,
    })
}

/// `GET {prefix}`.
async fn list(req: HttpRequest, subs: &[Arc<Sub>]) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let mut items = Vec::with_capacity(subs.len());
    for sub in subs {
        items.push(view(st, sub).await?);
    }
    Ok(HttpResponse::Ok().json(WebhookList { items }))
}

/// `GET {prefix}{name}/deliveries/`.
async fn deliveries(
    req: HttpRequest,
    subs: &[Arc<Sub>],
    name: &str,
) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let sub = named(subs, name)?;
    let query: ListQuery = serde_urlencoded::from_str(req.query_string()).map_err(|_| {
        Error::bad_param(
            "query",
            "takes `status` (pending, delivered, dead) and `limit` only",
        )
    })?;
    let status = match query.status.as_deref() {
        None | Some("") => None,
        Some("pending") => Some(DeliveryStatus::Pending),
        Some("delivered") => Some(DeliveryStatus::Delivered),
        Some("dead") => Some(DeliveryStatus::Dead),
        Some(_) => return Err(Error::bad_param("status", "is pending, delivered or dead")),
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::bad_param("limit", format!("is 1 to {MAX_LIMIT}")));
    }
    let items = super::deliveries(&st.db, &sub.name, status, limit).await?;
    Ok(HttpResponse::Ok().json(DeliveryList { items }))
}

/// `POST {prefix}{name}/enable/`.
async fn enable(req: HttpRequest, subs: &[Arc<Sub>], name: &str) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let sub = named(subs, name)?;
    store::ensure(&st.db, &sub.name).await?;
    store::enable(&st.db, &sub.name).await?;
    Ok(HttpResponse::Ok().json(view(st, sub).await?))
}

/// `POST {prefix}{name}/replay/`.
async fn replay(
    req: HttpRequest,
    subs: &[Arc<Sub>],
    name: &str,
    body: &[u8],
) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let sub = named(subs, name)?;
    let body: ReplayBody = serde_json::from_slice(body).map_err(|e| {
        Error::invalid_field(
            "body",
            format!("expected {{\"from_event\": n}} or {{\"since\": time}}: {e}"),
        )
    })?;
    let (event, since) = match (body.from_event, body.since) {
        (Some(n), None) => (Some(n), None),
        (None, Some(t)) => (None, Some(t.timestamp_micros())),
        _ => {
            return Err(Error::invalid_field(
                "from_event",
                "give one of `from_event` and `since`",
            ))
        }
    };
    let requeued = store::replay(&st.db, &sub.name, event, since).await?;
    Ok(HttpResponse::Ok().json(Requeued { requeued }))
}

/// `POST {prefix}deliveries/{id}/redeliver/`.
async fn redeliver(req: HttpRequest, id: web::Path<String>) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let found = match id.parse::<i64>() {
        Ok(n) => store::redeliver(&st.db, n).await?,
        Err(_) => false,
    };
    if !found {
        return Err(Error::NotFound(
            format!("No delivered or dead message {:?}.", id.as_str()).into(),
        ));
    }
    Ok(HttpResponse::Ok().json(Requeued { requeued: 1 }))
}
