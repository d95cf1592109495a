//! What a feed adds to the OpenAPI description (the `realtime` feature): `GET <prefix>events/`
//! as `text/event-stream` (the list's filters, `fields`, `scope`, the ticket and the resume
//! position; each event's shape as the `FeedEvent` schema) and `POST <prefix>events/ticket`.

use crate::crud::mount::docs::{callers, list, response_schema, OpParts};
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::paths::{
    MediaType, Operation as OpDoc, OperationType, ParameterIn, Response, Responses,
};
use apistos::reference_or::ReferenceOr;
use std::collections::BTreeMap;

/// One Server-Sent Event of a feed, as its `id:`, `event:` and `data:` lines say it.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct FeedEvent {
    /// `<position>_<stream token>`, on every event but `reset` and `end`; sent back as
    /// `Last-Event-ID` to resume.
    id: Option<String>,
    // What happened: the kinds are described on `FeedEventKind` (a `$ref` takes no description).
    event: FeedEventKind,
    /// The `data:` line, JSON: for `created`, `updated` and `restored` the item as the
    /// subscriber's `GET` renders it (trimmed to `fields`); for `deleted` the key alone
    /// (`{"id": ...}`); for `ready` `{}`; for `reset` and `end` `{"reason": ...}`.
    data: serde_json::Value,
}

/// The events of a feed.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum FeedEventKind {
    /// First: the stream's position.
    Ready,
    /// A row entered the view.
    Created,
    /// A row in view changed.
    Updated,
    /// A row left the view (key only).
    Deleted,
    /// A soft-deleted row was restored into the view.
    Restored,
    /// Reload what you show.
    Reset,
    /// The stream ends (session ended or expired, shutdown).
    End,
}

/// A stream ticket.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct StreamTicket {
    /// Put it in the feed's URL as `ticket=`: valid once.
    ticket: String,
    /// Seconds it stays valid.
    expires_in: u64,
}

/// The list parameters a feed does not take.
const NOT_FOR_FEEDS: [&str; 7] = [
    "page",
    "page_size",
    "sort",
    "cursor",
    "count",
    "expand",
    "include_deleted",
];

/// Adds the feed and its ticket operation.
pub(super) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    let Some(index) = m.shared.ops.get(&Operation::Index) else {
        return;
    };
    let item = response_schema(doc, index);
    let OpParts { mut params, .. } = list::index_parts(doc, index, m, item);
    params.retain(|p| match p {
        ReferenceOr::Object(p) => !NOT_FOR_FEEDS.contains(&p.name.as_str()),
        ReferenceOr::Reference { .. } => true,
    });
    let text = doc.generator().subschema_for::<String>();
    params.push(parameter(
        "ticket",
        ParameterIn::Query,
        false,
        Some("A stream ticket (`POST events/ticket`) standing for the bearer token, for clients that cannot send `Authorization` (browsers' EventSource). Valid once.".into()),
        text.clone(),
    ));
    params.push(parameter(
        "Last-Event-ID",
        ParameterIn::Header,
        false,
        Some("The `id` of the last event received, to resume: what was missed comes first, or `reset` when it cannot be told.".into()),
        text.clone(),
    ));
    params.push(parameter(
        "last_event_id",
        ParameterIn::Query,
        false,
        Some("`Last-Event-ID`, for clients that cannot send the header.".into()),
        text,
    ));
    let event = doc.schema::<FeedEvent>();
    let mut responses = BTreeMap::from([(
        "200".to_owned(),
        ReferenceOr::Object(Response {
            description: "Server-Sent Events: `ready`, then `created`, `updated`, `deleted`, `restored` of the items the caller may read in the view asked for, `reset` and `end`; a `: heartbeat` comment when idle. Each event is one `FeedEvent`.".to_owned(),
            content: BTreeMap::from([(
                "text/event-stream".to_owned(),
                MediaType {
                    schema: Some(event),
                    ..Default::default()
                },
            )]),
            ..Default::default()
        }),
    )]);
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::UNAUTHORIZED,
        StatusCode::FORBIDDEN,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::SERVICE_UNAVAILABLE,
    ] {
        let (code, r) = problem_response(doc, status);
        responses.insert(code, r);
    }
    let (extensions, who, security) =
        callers::callers_at(doc, Operation::Index, index, m, Door::Feed, &mut responses);
    let about = "Live updates as Server-Sent Events, judged per subscriber by the read rules, with the list's filters, `scope` and `fields` (see docs/realtime.md).";
    let prefix = &m.prefix;
    doc.add_operation(
        &format!("{prefix}{}", crate::realtime::PATH),
        OperationType::Get,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!("Follow changes to {} items", R::NAME)),
            description: Some(match who {
                Some(who) => format!("{about}\n\n{who}"),
                None => about.to_owned(),
            }),
            operation_id: Some(format!("stream{}Events", R::NAME)),
            parameters: params,
            responses: Responses {
                responses,
                ..Default::default()
            },
            security,
            extensions,
            ..Default::default()
        },
    );
    let ticket = doc.schema::<StreamTicket>();
    let mut responses = BTreeMap::from([(
        "200".to_owned(),
        json_response("A ticket for the feed, valid once and briefly.", ticket),
    )]);
    // 429: the caller holds as many unused tickets as it may open streams; 503: the process
    // holds as many as it keeps.
    for status in [
        StatusCode::UNAUTHORIZED,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::SERVICE_UNAVAILABLE,
    ] {
        let (code, r) = problem_response(doc, status);
        responses.insert(code, r);
    }
    doc.add_operation(
        &format!("{prefix}{}", crate::realtime::TICKET_PATH),
        OperationType::Post,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!("Get a ticket to follow {} items", R::NAME)),
            operation_id: Some(format!("create{}StreamTicket", R::NAME)),
            responses: Responses {
                responses,
                ..Default::default()
            },
            security: callers::security(false),
            ..Default::default()
        },
    );
}
