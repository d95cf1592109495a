//! A loopback webhook receiver for tests: an HTTP server that keeps every message it is sent,
//! checks each signature with the `standardwebhooks` crate (the specification's reference Rust
//! implementation, not crudforge's code), and answers as its script says (by default `204`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// One message received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `webhook-id`.
    pub id: String,
    /// `webhook-timestamp`.
    pub timestamp: String,
    /// `webhook-signature`.
    pub signature: String,
    /// The body, as JSON.
    pub body: serde_json::Value,
    /// Whether the signature held under the receiver's secret.
    pub verified: bool,
    /// The status the receiver answered.
    pub answered: u16,
}

/// An answer the receiver gives: a status and, when set, `Retry-After`.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// `Retry-After`'s value.
    pub retry_after: Option<String>,
}

impl Answer {
    /// `status`, nothing else.
    #[must_use]
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            retry_after: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: VecDeque<Answer>,
    always: Option<Answer>,
    at_once: usize,
    most_at_once: usize,
}

/// A receiver listening on a loopback port until its server stops.
#[derive(Clone)]
pub struct Receiver {
    /// Where it listens.
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    handle: actix_web::dev::ServerHandle,
}

impl Receiver {
    /// Starts a receiver that checks signatures under `secret` (`whsec_...`).
    ///
    /// # Panics
    ///
    /// The port cannot be bound.
    pub fn start(secret: &str) -> Receiver {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let verifier = Arc::new(standardwebhooks::Webhook::new(secret).expect("a secret"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let addr = listener.local_addr().expect("its address");
        let state = Arc::clone(&inner);
        let server = actix_web::HttpServer::new(move || {
            let state = Arc::clone(&state);
            let verifier = Arc::clone(&verifier);
            actix_web::App::new().default_service(actix_web::web::to(
                move |req: actix_web::HttpRequest, body: actix_web::web::Bytes| {
                    let state = Arc::clone(&state);
                    let verifier = Arc::clone(&verifier);
                    async move {
                        {
                            let mut inner = lock(&state);
                            inner.at_once += 1;
                            inner.most_at_once = inner.most_at_once.max(inner.at_once);
                        }
                        // Long enough for messages sent at once to overlap here.
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        let resp = answer(&state, &verifier, &req, &body);
                        lock(&state).at_once -= 1;
                        resp
                    }
                },
            ))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .expect("listen")
        .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Receiver {
            addr,
            inner,
            handle,
        }
    }

    /// The URL of its endpoint.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Answers the next messages with `answers`, in order, then as before.
    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.inner).script.extend(answers);
    }

    /// Answers every message with `answer` from now on (`None`: `204`).
    pub fn always(&self, answer: Option<Answer>) {
        lock(&self.inner).always = answer;
    }

    /// Every message received so far.
    #[must_use]
    pub fn received(&self) -> Vec<Received> {
        lock(&self.inner).received.clone()
    }

    /// The most messages it was handling at once.
    #[must_use]
    pub fn most_at_once(&self) -> usize {
        lock(&self.inner).most_at_once
    }

    /// Stops the server: its port refuses connections.
    pub async fn stop(&self) {
        self.handle.stop(false).await;
    }
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn answer(
    state: &Mutex<Inner>,
    verifier: &standardwebhooks::Webhook,
    req: &actix_web::HttpRequest,
    body: &[u8],
) -> actix_web::HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut headers = http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        if let Ok(v) = http::HeaderValue::from_str(&header(name)) {
            headers.insert(name, v);
        }
    }
    let verified = verifier.verify(body, &headers).is_ok();
    let mut inner = lock(state);
    let given = inner
        .script
        .pop_front()
        .or_else(|| inner.always.clone())
        .unwrap_or(Answer::status(204));
    inner.received.push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: serde_json::from_slice(body).unwrap_or(serde_json::Value::Null),
        verified,
        answered: given.status,
    });
    let status = actix_web::http::StatusCode::from_u16(given.status)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = actix_web::HttpResponse::build(status);
    if let Some(after) = given.retry_after {
        resp.insert_header(("retry-after", after));
    }
    resp.body(format!("answer {}", given.status))
}
