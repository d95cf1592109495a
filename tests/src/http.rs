//! Requests to an API under test, in process: a request signed as a user, and a call that
//! gives back the status and the body (as bytes, or as JSON).

use actix_web::test;
use crudforge::Api;
use serde_json::Value;
use uuid::Uuid;

/// A request to build.
pub type Req = test::TestRequest;

/// `req` with the access token `token` as its bearer.
pub fn bearer(req: Req, token: &str) -> Req {
    req.insert_header(("authorization", format!("Bearer {token}")))
}

/// `req` with a bearer token of user `id`.
pub fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    let token = api
        .state()
        .tokens
        .access(id)
        .expect("an access token for a test user");
    bearer(req, &token)
}

/// Sends `req` to `app`: the status and the body's bytes.
pub async fn call<S, B>(app: &S, req: Req) -> (u16, Vec<u8>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, _, body) = exchange(app, req).await;
    (status, body)
}

/// Sends `req` to `app`: the status, the headers and the body's bytes.
pub async fn exchange<S, B>(app: &S, req: Req) -> (u16, actix_web::http::header::HeaderMap, Vec<u8>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, test::read_body(resp).await.to_vec())
}

/// Sends `req` to `app`: the status and the body as JSON (`null` when empty).
///
/// # Panics
///
/// When a body that is not empty is not JSON.
pub async fn send<S, B>(app: &S, req: Req) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, body) = call(app, req).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        json_of(&body)
    };
    (status, body)
}

/// A JSON body, or a panic showing the text it was.
pub fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(body)))
}
