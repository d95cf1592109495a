//! The framework reference: a minimal actix-web server, run as a child process of its own
//! (`api-bench --serve-reference PORT --canned FILE`) so that its CPU time is measured like the
//! reference application's. It checks the same HS256 access token with crudforge's own
//! verifier and the same signing key, parses JSON bodies, and answers W1/W2/W3/W4/W6-shaped
//! requests with the JSON the real server gave (captured before the measurements), serialized
//! per request, with no I/O.

use actix_web::{web, HttpRequest, HttpResponse};
use crudforge::auth::{TokenKind, Tokens};
use crudforge::config::Secret;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The captured answers of the real server, one per workload shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Canned {
    /// `GET /api/critters/{id}`.
    pub(crate) item: serde_json::Value,
    /// `GET /api/critters/?species=cat&cuteness_level__gte=5&page=2&page_size=25`.
    pub(crate) page: serde_json::Value,
    /// `POST /api/critters/` (201).
    pub(crate) created: serde_json::Value,
    /// `PATCH /api/critters/{id}`.
    pub(crate) patched: serde_json::Value,
    /// `GET /health`.
    pub(crate) health: serde_json::Value,
}

struct State {
    canned: Canned,
    tokens: Tokens,
}

fn authorized(req: &HttpRequest, st: &State) -> bool {
    req.headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| st.tokens.verify(t, TokenKind::Access).is_ok())
}

fn unauthorized() -> HttpResponse {
    HttpResponse::Unauthorized().json(serde_json::json!({"detail": "invalid token"}))
}

async fn item(req: HttpRequest, id: web::Path<uuid::Uuid>, st: web::Data<State>) -> HttpResponse {
    if !authorized(&req, &st) {
        return unauthorized();
    }
    let _ = id.into_inner();
    HttpResponse::Ok().json(&st.canned.item)
}

/// The query of W2, parsed like a list request would be.
#[derive(Deserialize)]
struct ListQuery {
    species: Option<String>,
    #[serde(rename = "cuteness_level__gte")]
    cuteness_min: Option<i32>,
    page: Option<u32>,
    page_size: Option<u32>,
}

async fn page(req: HttpRequest, q: web::Query<ListQuery>, st: web::Data<State>) -> HttpResponse {
    if !authorized(&req, &st) {
        return unauthorized();
    }
    let q = q.into_inner();
    let _ = (q.species, q.cuteness_min, q.page, q.page_size);
    HttpResponse::Ok().json(&st.canned.page)
}

async fn create(
    req: HttpRequest,
    body: web::Json<serde_json::Value>,
    st: web::Data<State>,
) -> HttpResponse {
    if !authorized(&req, &st) {
        return unauthorized();
    }
    drop(body);
    HttpResponse::Created().json(&st.canned.created)
}

async fn patch(
    req: HttpRequest,
    id: web::Path<uuid::Uuid>,
    body: web::Json<serde_json::Value>,
    st: web::Data<State>,
) -> HttpResponse {
    if !authorized(&req, &st) {
        return unauthorized();
    }
    let _ = (id.into_inner(), body.into_inner());
    HttpResponse::Ok().json(&st.canned.patched)
}

async fn health(st: web::Data<State>) -> HttpResponse {
    HttpResponse::Ok().json(&st.canned.health)
}

/// Serves the canned answers in `canned` on `127.0.0.1:port` until killed (actix-web's default
/// worker count: one per CPU the process may run on).
pub(crate) fn serve(port: u16, canned: &Path, secret: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(canned)
        .map_err(|e| format!("cannot read {}: {e}", canned.display()))?;
    let canned: Canned =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", canned.display()))?;
    let state = web::Data::new(State {
        canned,
        tokens: Tokens::new(&Secret::new(secret), 900, 900),
    });
    actix_web::rt::System::new().block_on(async move {
        actix_web::HttpServer::new(move || {
            actix_web::App::new()
                .app_data(state.clone())
                .route("/health", web::get().to(health))
                .route("/api/critters/", web::get().to(page))
                .route("/api/critters/", web::post().to(create))
                .route("/api/critters/{id}", web::get().to(item))
                .route("/api/critters/{id}", web::patch().to(patch))
        })
        .bind(("127.0.0.1", port))
        .map_err(|e| format!("bind 127.0.0.1:{port}: {e}"))?
        .run()
        .await
        .map_err(|e| format!("reference server: {e}"))
    })
}
