//! Readiness: whether this instance should get traffic. 503 while it starts (migrations),
//! while its database is unreachable, and from the moment a graceful shutdown begins, so a
//! load balancer drains it first; `/health` keeps its own contract beside it.

use crate::health::HEALTH_DB_TIMEOUT;
use crate::openapi::{json_response, ApiDoc};
use crate::state::ApiState;
use actix_web::{web, HttpResponse};
use apistos::paths::{Operation, OperationType, Responses};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Started, not serving yet (migrations run).
    Starting,
    /// Serving.
    Ready,
    /// A graceful shutdown has begun.
    Draining,
}

impl Phase {
    /// The phase as the readiness body names it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Ready => "ready",
            Phase::Draining => "draining",
        }
    }
}

/// The phase of a running [`Api`](crate::Api), shared by its workers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Readiness(Arc<AtomicU8>);

impl Readiness {
    /// A readiness in `phase`.
    pub(crate) fn new(phase: Phase) -> Readiness {
        Readiness(Arc::new(AtomicU8::new(phase as u8)))
    }

    /// The current phase.
    pub(crate) fn phase(&self) -> Phase {
        match self.0.load(Ordering::Acquire) {
            0 => Phase::Starting,
            1 => Phase::Ready,
            _ => Phase::Draining,
        }
    }

    /// Marks the instance starting (not ready), unless it is draining.
    pub fn set_starting(&self) {
        let _ = self.0.compare_exchange(
            Phase::Ready as u8,
            Phase::Starting as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Marks the instance ready, unless it is draining.
    pub fn set_ready(&self) {
        let _ = self.0.compare_exchange(
            Phase::Starting as u8,
            Phase::Ready as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Marks the instance draining, for good.
    pub fn begin_shutdown(&self) {
        self.0.store(Phase::Draining as u8, Ordering::Release);
    }
}

/// Body of the readiness answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ReadinessStatus {
    /// `ready`, `starting`, `draining`, or `unavailable` when the database cannot be reached.
    pub status: String,
    /// `connected`, `disconnected`, or `unchecked` while starting or draining.
    pub database: String,
}

pub(crate) async fn ready(
    state: web::Data<ApiState>,
    readiness: web::Data<Readiness>,
) -> HttpResponse {
    let phase = readiness.phase();
    let body = if phase == Phase::Ready {
        let up = state.db.ping(HEALTH_DB_TIMEOUT).await;
        ReadinessStatus {
            status: if up { "ready" } else { "unavailable" }.to_owned(),
            database: if up { "connected" } else { "disconnected" }.to_owned(),
        }
    } else {
        ReadinessStatus {
            status: phase.as_str().to_owned(),
            database: "unchecked".to_owned(),
        }
    };
    if body.status == "ready" {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable()
            .insert_header(("Retry-After", "5"))
            .json(body)
    }
}

pub(crate) fn document(doc: &mut ApiDoc, path: &str) {
    let schema = doc.schema::<ReadinessStatus>();
    let op = Operation {
        tags: vec!["health".to_owned()],
        summary: Some("Readiness for traffic".to_owned()),
        description: Some(
            "200 when this instance should get traffic; 503 while it starts (migrations), while its database is unreachable, and once a graceful shutdown has begun.\n\nWho may call: anyone, without a token.".to_owned(),
        ),
        operation_id: Some("readiness".to_owned()),
        security: Some(Vec::new()),
        responses: Responses {
            responses: BTreeMap::from([
                ("200".to_owned(), json_response("Ready", schema.clone())),
                ("503".to_owned(), json_response("Not ready", schema)),
            ]),
            ..Default::default()
        },
        ..Default::default()
    };
    doc.add_operation(path, OperationType::Get, op);
}
