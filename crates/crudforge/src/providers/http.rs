//! The providers' HTTP: one `reqwest` client (rustls, ten-second timeouts, no redirects
//! followed), answers read up to a size limit, and the client `openidconnect` and `oauth2`
//! call through.

use std::time::Duration;

/// The largest answer read from a provider (a discovery document, a key set, a token).
const MAX_ANSWER: usize = 256 * 1024;

/// Why a request to a provider failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpError(pub(crate) String);

/// The HTTP client of every provider.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
}

impl Http {
    /// A client that follows no redirect (a provider's endpoints answer where they are) and
    /// gives up after ten seconds.
    pub(crate) fn new() -> Result<Http, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("crudforge/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Http { client })
    }

    /// Sends `request` and reads its answer (at most [`MAX_ANSWER`] bytes).
    pub(crate) async fn call(
        &self,
        request: openidconnect::HttpRequest,
    ) -> Result<openidconnect::HttpResponse, HttpError> {
        let (parts, body) = request.into_parts();
        let mut out = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(without_url)?;
        let mut answer = openidconnect::http::Response::builder().status(out.status());
        for (name, value) in out.headers() {
            answer = answer.header(name, value);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = out.chunk().await.map_err(without_url)? {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(HttpError("the answer is too large".to_owned()));
            }
            bytes.extend_from_slice(&chunk);
        }
        answer.body(bytes).map_err(|e| HttpError(e.to_string()))
    }

    /// `GET url` with a bearer token: the answer's status and its JSON (at most
    /// [`MAX_ANSWER`] bytes).
    pub(crate) async fn get_json(
        &self,
        url: &str,
        bearer: &str,
    ) -> Result<serde_json::Value, HttpError> {
        let request = openidconnect::http::Request::builder()
            .method("GET")
            .uri(url)
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/json")
            .body(Vec::new())
            .map_err(|e| HttpError(e.to_string()))?;
        let answer = self.call(request).await?;
        if !answer.status().is_success() {
            return Err(HttpError(format!("{url} answered {}", answer.status())));
        }
        serde_json::from_slice(answer.body())
            .map_err(|_| HttpError(format!("{url} did not answer JSON")))
    }
}

/// A request's error without its URL (whose query may hold a code or a token).
fn without_url(e: reqwest::Error) -> HttpError {
    HttpError(e.without_url().to_string())
}

/// Whether `url` may be a provider's: `https`, or `http` to a loopback address (a provider
/// on the same machine, in development and tests).
pub(crate) fn acceptable(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(a)) => a.is_loopback(),
            Some(url::Host::Ipv6(a)) => a.is_loopback(),
            None => false,
        },
        _ => false,
    }
}
