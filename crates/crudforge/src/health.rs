//! The health endpoint: service status, time, version and database reachability.

use crate::openapi::{json_response, ApiDoc};
use crate::state::ApiState;
use actix_web::{web, HttpResponse};
use apistos::paths::{Operation, OperationType, Responses};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long the health check waits for the database.
pub(crate) const HEALTH_DB_TIMEOUT: Duration = Duration::from_secs(2);

/// Body of the health response.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct HealthStatus {
    /// `healthy`, or `unhealthy` when the database cannot be reached.
    pub status: String,
    /// Time of the check, RFC 3339 with a UTC offset.
    pub timestamp: String,
    /// The service version (`API_VERSION`).
    pub version: String,
    /// `connected`, or `disconnected`.
    pub database: String,
}

pub(crate) async fn health(state: web::Data<ApiState>) -> HttpResponse {
    let up = state.db.ping(HEALTH_DB_TIMEOUT).await;
    let body = HealthStatus {
        status: if up { "healthy" } else { "unhealthy" }.to_owned(),
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
        version: state.config.http.api_version.clone(),
        database: if up { "connected" } else { "disconnected" }.to_owned(),
    };
    if up {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub(crate) fn document(doc: &mut ApiDoc, path: &str) {
    let schema = doc.schema::<HealthStatus>();
    let op = Operation {
        tags: vec!["health".to_owned()],
        summary: Some("Service health".to_owned()),
        description: Some(
            "Reports whether the service and its database are up; 503 when the database cannot be reached.\n\nWho may call: anyone, without a token.".to_owned(),
        ),
        operation_id: Some("health".to_owned()),
        security: Some(Vec::new()),
        responses: Responses {
            responses: BTreeMap::from([
                ("200".to_owned(), json_response("Healthy", schema.clone())),
                ("503".to_owned(), json_response("Database unreachable", schema)),
            ]),
            ..Default::default()
        },
        ..Default::default()
    };
    doc.add_operation(path, OperationType::Get, op);
}
