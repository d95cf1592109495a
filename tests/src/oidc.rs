//! A loopback OpenID Connect (and OAuth 2.0) identity provider for tests: crudforge's server
//! code talks to it over real HTTP (discovery, JWKS, token, user info, and the user endpoints
//! of GitHub, Discord and Facebook), while the test plays the user's browser with
//! [`MockProvider::authorize`] (or a real browser follows `GET /authorize`, which signs the
//! current user in at once and redirects back) and makes the provider misbehave with
//! [`MockProvider::fault`].
//!
//! It speaks just enough HTTP/1.1 (one thread per connection, keep-alive, `Content-Length` or
//! chunked request bodies) and answers JSON. ID tokens are ES256 (P-256) JWTs.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The client id the provider knows (the only one).
pub const CLIENT_ID: &str = "crudforge-test";
/// The secret of [`CLIENT_ID`].
pub const CLIENT_SECRET: &str = "mock-client-secret";

/// The issuer a faulty provider claims to be.
const EVIL_ISSUER: &str = "http://evil.example";
/// The largest request body it reads.
const MAX_BODY: usize = 1 << 20;
/// The largest request line or header line it reads.
const MAX_LINE: u64 = 16 << 10;
/// The most header lines it reads in one request.
const MAX_HEADERS: usize = 100;
/// How long an authorization code may wait for its exchange.
const CODE_LIFETIME: Duration = Duration::from_secs(600);
/// How long ID tokens and access tokens last, in seconds.
const TOKEN_LIFETIME: i64 = 600;

/// Who signs in at the provider, and the claims it gives about them.
#[derive(Clone, Debug)]
pub struct MockUser {
    /// The subject: the user's stable id at the provider (GitHub's numeric `id` when it parses
    /// as a number).
    pub sub: String,
    /// The e-mail address, if the provider knows one.
    pub email: Option<String>,
    /// Whether the provider vouches for `email`.
    pub email_verified: bool,
    /// The display name.
    pub name: Option<String>,
    /// The `groups` claim.
    pub groups: Vec<String>,
}

impl Default for MockUser {
    /// The user who signs in until [`MockProvider::set_user`] names another: `sub` `1001`,
    /// `ada@example.com` (verified), named `Ada Lovelace`, in no group.
    fn default() -> MockUser {
        MockUser {
            sub: "1001".to_owned(),
            email: Some("ada@example.com".to_owned()),
            email_verified: true,
            name: Some("Ada Lovelace".to_owned()),
            groups: Vec::new(),
        }
    }
}

impl MockUser {
    /// The handle the OAuth 2.0 shapes give (GitHub's `login`, Discord's `username`): the local
    /// part of the e-mail address, or `sub` without one.
    fn login(&self) -> String {
        self.email
            .as_deref()
            .and_then(|e| e.split('@').next())
            .filter(|l| !l.is_empty())
            .unwrap_or(&self.sub)
            .to_owned()
    }
}

/// One fault the provider commits, for every ID token (or answer) it gives until
/// [`MockProvider::behave`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The ID token's signature bytes are altered.
    BadSignature,
    /// The ID token's `iss` is `http://evil.example`.
    WrongIssuer,
    /// The ID token's `aud` is `["someone-else"]`.
    WrongAudience,
    /// The ID token's `aud` is `[CLIENT_ID, "other"]`, without `azp`.
    ExtraAudienceNoAzp,
    /// The ID token's `aud` is `CLIENT_ID` alone and its `azp` (the party it was issued to)
    /// is `"other"`.
    WrongAzp,
    /// The ID token expired an hour ago (`exp` = now − 3600, `iat` = now − 7200).
    Expired,
    /// The ID token has no `iat` claim.
    NoIat,
    /// The ID token was issued an hour from now (`iat` = now + 3600).
    IssuedInFuture,
    /// The ID token has no `nonce` claim.
    NoNonce,
    /// The ID token's `nonce` is `"not-the-nonce"`.
    WrongNonce,
    /// The ID token is unsigned: header `{"alg":"none"}`, empty signature (`h.p.`).
    AlgNone,
    /// The ID token is HS256, with the current key's `kid`, its HMAC secret the current
    /// public key's SEC1 uncompressed point (65 bytes: `0x04 || x || y`, which is what
    /// `jsonwebtoken::DecodingKey::from_jwk` holds for an EC key): the algorithm-confusion
    /// attack.
    HmacWithPublicKey,
    /// The ID token is signed with a fresh key whose `kid` is not in the JWKS until
    /// [`MockProvider::publish_next_key`].
    UnknownKid,
    /// The user-info endpoint answers `sub` = `"someone-else"`.
    UserinfoSubject,
    /// [`MockProvider::authorize`] redirects with `iss` = `http://evil.example` (RFC 9207).
    WrongIssParam,
}

/// Where the provider sends the browser back after a sign-in.
#[derive(Clone, Debug)]
pub struct Redirect {
    /// The whole URL: the `redirect_uri` with `code`, `state` and `iss` added to its query.
    pub url: String,
    /// The authorization code.
    pub code: String,
    /// The client's `state`, returned as given.
    pub state: String,
    /// The `iss` parameter (RFC 9207).
    pub iss: Option<String>,
}

/// A signing key.
struct Key {
    /// Its `kid`.
    kid: String,
    /// The private key, PKCS#8 DER.
    der: Vec<u8>,
    /// The public key, SEC1 uncompressed (`0x04 || x || y`).
    point: Vec<u8>,
}

impl Key {
    /// A fresh P-256 key named `kid`.
    fn generate(kid: String) -> Key {
        let secret = loop {
            // A scalar that is zero or at least the group order is refused: draw again.
            if let Ok(secret) = p256::SecretKey::from_slice(&random_bytes()) {
                break secret;
            }
        };
        let der = secret
            .to_pkcs8_der()
            .expect("a P-256 key encodes as PKCS#8")
            .as_bytes()
            .to_vec();
        let point = secret
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec();
        Key { kid, der, point }
    }

    /// Its public JWK.
    fn jwk(&self) -> Value {
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&self.point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&self.point[33..65]),
            "kid": self.kid,
            "use": "sig",
            "alg": "ES256",
        })
    }
}

/// An authorization code's binding.
#[derive(Clone)]
struct Grant {
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    nonce: Option<String>,
    scope: String,
    user: MockUser,
    issued: Instant,
    used: bool,
}

/// What an access token grants.
#[derive(Clone)]
struct Access {
    user: MockUser,
}

/// The provider's state, shared by its connections.
struct State {
    issuer: String,
    redirects: Vec<String>,
    user: MockUser,
    faults: Vec<Fault>,
    /// The current signing key.
    key: Key,
    /// The key [`Fault::UnknownKid`] signs with.
    next_key: Key,
    /// Whether `next_key` is in the JWKS.
    next_published: bool,
    /// Keys made so far, for fresh `kid`s.
    keys_made: usize,
    hits: HashMap<String, usize>,
    codes: HashMap<String, Grant>,
    issued_codes: usize,
    tokens: HashMap<String, Access>,
}

impl State {
    fn has(&self, fault: &Fault) -> bool {
        self.faults.contains(fault)
    }

    /// A new key with a `kid` never used before.
    fn new_key(&mut self) -> Key {
        self.keys_made += 1;
        let tag = URL_SAFE_NO_PAD.encode(&random_bytes()[..6]);
        Key::generate(format!("mock-{}-{tag}", self.keys_made))
    }
}

/// A loopback OpenID Connect provider serving until the process ends (its threads are not
/// stopped when it is dropped). Clones share one provider.
#[derive(Clone)]
pub struct MockProvider {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for MockProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MockProvider({})", self.issuer())
    }
}

impl MockProvider {
    /// A provider on `127.0.0.1`, a free port, with [`MockUser::default`] signing in, no
    /// redirect URI registered and no fault.
    pub fn start() -> MockProvider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock provider");
        let addr = listener.local_addr().expect("the mock provider's address");
        let first = Key::generate("mock-1".to_owned());
        let next = Key::generate("mock-2".to_owned());
        let state = Arc::new(Mutex::new(State {
            issuer: format!("http://{addr}"),
            redirects: Vec::new(),
            user: MockUser::default(),
            faults: Vec::new(),
            key: first,
            next_key: next,
            next_published: false,
            keys_made: 2,
            hits: HashMap::new(),
            codes: HashMap::new(),
            issued_codes: 0,
            tokens: HashMap::new(),
        }));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        MockProvider { addr, state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The issuer: `http://127.0.0.1:<port>`, no trailing slash.
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Registers a redirect URI the client may use (matched exactly).
    pub fn register_redirect(&self, uri: &str) {
        let mut state = self.lock();
        if !state.redirects.iter().any(|r| r == uri) {
            state.redirects.push(uri.to_owned());
        }
    }

    /// Who signs in at the next [`authorize`](Self::authorize) (codes minted before keep their
    /// user).
    pub fn set_user(&self, user: MockUser) {
        self.lock().user = user;
    }

    /// Adds a fault, committed until [`behave`](Self::behave).
    pub fn fault(&self, fault: Fault) {
        let mut state = self.lock();
        if !state.has(&fault) {
            state.faults.push(fault);
        }
    }

    /// Clears every fault.
    pub fn behave(&self) {
        self.lock().faults.clear();
    }

    /// Signs with a new key with a new `kid` from now on; the JWKS then holds only that key
    /// (the key [`Fault::UnknownKid`] signs with is replaced too, unpublished).
    pub fn rotate_keys(&self) {
        let mut state = self.lock();
        state.key = state.new_key();
        state.next_key = state.new_key();
        state.next_published = false;
    }

    /// Puts the key [`Fault::UnknownKid`] signs with into the JWKS, beside the current key, so
    /// a client that fetches the JWKS again finds it.
    pub fn publish_next_key(&self) {
        self.lock().next_published = true;
    }

    /// How many requests hit `path` (without query string, percent-decoded), for instance
    /// `"/jwks"`. Each [`authorize`](Self::authorize) counts as a hit of `"/authorize"`.
    pub fn hits(&self, path: &str) -> usize {
        self.lock().hits.get(path).copied().unwrap_or(0)
    }

    /// How many authorization codes [`authorize`](Self::authorize) minted.
    pub fn issued_codes(&self) -> usize {
        self.lock().issued_codes
    }

    /// Plays the user's browser at the authorization endpoint: checks `authorization_url` as a
    /// provider would (this provider's `/authorize`, `response_type=code`, `client_id`, a
    /// registered `redirect_uri`, `state`, an S256 `code_challenge`; no parameter twice), signs
    /// the current user in, and gives the redirect back to the client with a fresh single-use
    /// code. `scope` may lack `openid` (plain OAuth 2.0: no ID token); `nonce` is optional (the
    /// ID token then has none).
    ///
    /// A real browser gets the same at `GET /authorize`: `302 Found` to the redirect, or a 400
    /// page saying what was refused.
    ///
    /// # Errors
    ///
    /// What a provider would refuse, in words.
    pub fn authorize(&self, authorization_url: &str) -> Result<Redirect, String> {
        let params = authorization_params(&self.issuer(), authorization_url)?;
        self.lock()
            .hits
            .entry("/authorize".to_owned())
            .and_modify(|n| *n += 1)
            .or_insert(1);
        grant(&self.state, &params)
    }
}

/// The parameters of `authorization_url`, when it is `issuer`'s authorization endpoint and
/// names no parameter twice.
fn authorization_params(
    issuer: &str,
    authorization_url: &str,
) -> Result<HashMap<String, String>, String> {
    let url = url::Url::parse(authorization_url)
        .map_err(|e| format!("unparsable authorization URL {authorization_url:?}: {e}"))?;
    let expected = url::Url::parse(&format!("{issuer}/authorize"))
        .map_err(|e| format!("the issuer's URL: {e}"))?;
    if url.origin() != expected.origin() || url.path() != "/authorize" {
        return Err(format!(
            "{authorization_url} is not this provider's authorization endpoint {expected}"
        ));
    }
    let mut params: HashMap<String, String> = HashMap::new();
    for (name, value) in url.query_pairs() {
        if params
            .insert(name.clone().into_owned(), value.into_owned())
            .is_some()
        {
            return Err(format!("parameter {name} given more than once"));
        }
    }
    Ok(params)
}

/// The authorization endpoint's work, for [`MockProvider::authorize`] and `GET /authorize`
/// alike: checks an authorization request's parameters as a provider would, signs the current
/// user in, and gives the redirect back to the client with a fresh single-use code.
fn grant(state: &Mutex<State>, params: &HashMap<String, String>) -> Result<Redirect, String> {
    let get = |name: &str| params.get(name).map(String::as_str);
    match get("response_type") {
        Some("code") => {}
        other => return Err(format!("response_type must be code, not {other:?}")),
    }
    match get("client_id") {
        Some(CLIENT_ID) => {}
        other => return Err(format!("unknown client_id {other:?}")),
    }
    let redirect_uri = get("redirect_uri").ok_or("redirect_uri missing")?;
    if !lock(state).redirects.iter().any(|r| r == redirect_uri) {
        return Err(format!("redirect_uri {redirect_uri:?} is not registered"));
    }
    let client_state = get("state")
        .filter(|s| !s.is_empty())
        .ok_or("state missing")?;
    let code_challenge = get("code_challenge").ok_or("code_challenge missing (PKCE)")?;
    match get("code_challenge_method") {
        Some("S256") => {}
        other => {
            return Err(format!("code_challenge_method must be S256, not {other:?}"));
        }
    }
    if code_challenge.len() != 43 || !code_challenge.bytes().all(is_base64url) {
        return Err(format!(
            "code_challenge {code_challenge:?} is not a base64url SHA-256"
        ));
    }
    let scope = get("scope").unwrap_or_default().to_owned();
    let nonce = get("nonce").map(str::to_owned);

    let mut redirect = url::Url::parse(redirect_uri).map_err(|e| format!("redirect_uri: {e}"))?;
    let code = random_token();
    let mut shared = lock(state);
    let iss = if shared.has(&Fault::WrongIssParam) {
        EVIL_ISSUER.to_owned()
    } else {
        shared.issuer.clone()
    };
    let grant = Grant {
        client_id: CLIENT_ID.to_owned(),
        redirect_uri: redirect_uri.to_owned(),
        code_challenge: code_challenge.to_owned(),
        nonce,
        scope,
        user: shared.user.clone(),
        issued: Instant::now(),
        used: false,
    };
    shared.codes.insert(code.clone(), grant);
    shared.issued_codes += 1;
    drop(shared);
    redirect
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", client_state)
        .append_pair("iss", &iss);
    Ok(Redirect {
        url: redirect.into(),
        code,
        state: client_state.to_owned(),
        iss: Some(iss),
    })
}

/// Locks the state, through a poisoned lock too (a panicking test must not hide the cause
/// behind lock errors).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// 32 random bytes: SHA-256 of two version-4 UUIDs (no random-number crate needed).
fn random_bytes() -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(uuid::Uuid::new_v4().as_bytes());
    hash.update(uuid::Uuid::new_v4().as_bytes());
    hash.finalize().into()
}

/// 32 random URL-safe characters.
fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(&random_bytes()[..24])
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// BASE64URL(SHA256(verifier)), RFC 7636's S256.
fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// One request.
struct Request {
    method: String,
    /// Percent-decoded, without query.
    path: String,
    /// The query, as sent (without `?`; empty without one).
    query: String,
    /// Lower-case names.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Whether the connection ends after the answer.
    close: bool,
}

impl Request {
    /// The first header `name` (lower case).
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One answer.
struct Response {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Response {
    fn json(status: u16, body: &Value) -> Response {
        Response {
            status,
            headers: vec![("Content-Type", "application/json".to_owned())],
            body: body.to_string().into_bytes(),
        }
    }

    /// A small HTML page, for a browser: `title`, then `message` (escaped).
    fn page(status: u16, title: &str, message: &str) -> Response {
        let escape = |text: &str| {
            text.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let body = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
             </head><body><h1>{title}</h1><p>{}</p></body></html>\n",
            escape(message),
            title = escape(title),
        );
        Response {
            status,
            headers: vec![("Content-Type", "text/html; charset=utf-8".to_owned())],
            body: body.into_bytes(),
        }
    }

    /// An OAuth error answer.
    fn error(status: u16, error: &str, description: &str) -> Response {
        Response::json(
            status,
            &json!({ "error": error, "error_description": description }),
        )
    }

    fn with(mut self, name: &'static str, value: &str) -> Response {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// Why no request was read.
enum ReadError {
    /// The connection failed.
    Io(std::io::Error),
    /// The request is malformed: answer this status, then close.
    Bad(u16, String),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

fn bad(why: impl Into<String>) -> ReadError {
    ReadError::Bad(400, why.into())
}

/// One connection: requests until the peer closes it or asks to.
fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let request = match read_request(&mut reader) {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Bad(status, why)) => {
                let answer = Response::error(status, "invalid_request", &why);
                return write_response(&mut out, &answer, true);
            }
        };
        let answer = route(state, &request);
        write_response(&mut out, &answer, request.close)?;
        if request.close {
            return Ok(());
        }
    }
}

/// A line without its CRLF (or LF), at most [`MAX_LINE`] bytes; `None` at the end of input.
fn read_line(reader: &mut BufReader<TcpStream>) -> Result<Option<String>, ReadError> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(MAX_LINE)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n as u64 >= MAX_LINE {
            ReadError::Bad(431, "line too long".to_owned())
        } else {
            bad("connection closed mid-line")
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| bad("request head is not UTF-8"))
}

/// The next request, or `None` when the peer closed the connection between requests.
fn read_request(reader: &mut BufReader<TcpStream>) -> Result<Option<Request>, ReadError> {
    // Empty lines before a request line are ignored (RFC 9112 2.2).
    let start = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => {}
            Some(line) => break line,
        }
    };
    let mut parts = start.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(format!("malformed request line {start:?}")));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad(format!("malformed method {method:?}")));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(ReadError::Bad(505, format!("unsupported {version:?}"))),
    };
    let (raw_path, query) = target.split_once('?').unwrap_or((target, ""));
    if !raw_path.starts_with('/') {
        return Err(bad(format!("malformed request target {target:?}")));
    }
    let path = percent_decode(raw_path, false)
        .ok_or_else(|| bad(format!("malformed request target {target:?}")))?;

    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| bad("connection closed in the head"))?;
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(ReadError::Bad(431, "too many header lines".to_owned()));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!("malformed header line {line:?}")));
        };
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err(bad(format!("malformed header name {name:?}")));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    fn values<'h>(
        headers: &'h [(String, String)],
        name: &'h str,
    ) -> impl Iterator<Item = &'h str> + 'h {
        headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    let header = |name: &'static str| values(&headers, name);

    let connection: Vec<String> = header("connection")
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let close = connection.iter().any(|t| t == "close")
        || (http10 && !connection.iter().any(|t| t == "keep-alive"));

    let chunked = match header("transfer-encoding").last() {
        None => false,
        Some(te) if te.eq_ignore_ascii_case("chunked") => true,
        Some(te) => return Err(ReadError::Bad(501, format!("transfer-encoding {te:?}"))),
    };
    let lengths: Vec<&str> = header("content-length").collect();
    let body = if chunked {
        if !lengths.is_empty() {
            return Err(bad("both Content-Length and Transfer-Encoding"));
        }
        read_chunked(reader)?
    } else {
        let length = match lengths.as_slice() {
            [] => 0,
            [one] => one
                .parse::<usize>()
                .map_err(|_| bad(format!("malformed Content-Length {one:?}")))?,
            _ => return Err(bad("Content-Length given more than once")),
        };
        if length > MAX_BODY {
            return Err(ReadError::Bad(413, "body too large".to_owned()));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Some(Request {
        method: method.to_owned(),
        path,
        query: query.to_owned(),
        headers,
        body,
        close,
    }))
}

/// A chunked body (extensions and trailers ignored).
fn read_chunked(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| bad("connection closed in a chunk"))?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| bad(format!("malformed chunk size {size:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(reader)?
                .ok_or_else(|| bad("connection closed in trailers"))?
                .is_empty()
            {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Bad(413, "body too large".to_owned()));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        if read_line(reader)?.as_deref() != Some("") {
            return Err(bad("chunk not followed by CRLF"));
        }
    }
}

fn write_response(out: &mut TcpStream, answer: &Response, close: bool) -> std::io::Result<()> {
    let reason = match answer.status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", answer.status);
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nCache-Control: no-store\r\nConnection: {}\r\n\r\n",
        answer.body.len(),
        if close { "close" } else { "keep-alive" }
    ));
    // One write: a body written after its head would wait for the peer's delayed
    // acknowledgement of the head (Nagle's algorithm), some 40 ms an answer.
    let mut whole = head.into_bytes();
    whole.extend_from_slice(&answer.body);
    out.write_all(&whole)?;
    out.flush()
}

/// Decodes `%XX` escapes (and `+` as a space when `plus`); `None` for a malformed escape or
/// a result that is not UTF-8.
fn percent_decode(s: &str, plus: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

// ---------------------------------------------------------------------------------------------
// Endpoints

/// Records the hit and answers.
fn route(state: &Mutex<State>, request: &Request) -> Response {
    *lock(state).hits.entry(request.path.clone()).or_insert(0) += 1;
    let get = request.method == "GET";
    let allow = |methods: &str| {
        Response::error(405, "invalid_request", "method not allowed").with("Allow", methods)
    };
    match request.path.as_str() {
        "/.well-known/openid-configuration" if get => discovery(&lock(state).issuer),
        "/authorize" if get => authorize_page(state, request),
        "/jwks" if get => jwks(&lock(state)),
        "/token" if request.method == "POST" => token(state, request),
        "/userinfo" if get || request.method == "POST" => userinfo(state, request),
        "/github/user" | "/github/user/emails" | "/discord/users/@me" | "/facebook/me" if get => {
            oauth_user(state, request)
        }
        "/.well-known/openid-configuration"
        | "/authorize"
        | "/jwks"
        | "/github/user"
        | "/github/user/emails"
        | "/discord/users/@me"
        | "/facebook/me" => allow("GET"),
        "/token" => allow("POST"),
        "/userinfo" => allow("GET, POST"),
        _ => Response::error(404, "not_found", "no such endpoint"),
    }
}

/// `/.well-known/openid-configuration`.
fn discovery(issuer: &str) -> Response {
    Response::json(
        200,
        &json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "userinfo_endpoint": format!("{issuer}/userinfo"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "email", "profile", "groups"],
            "claims_supported": [
                "iss", "sub", "aud", "exp", "iat", "nonce", "azp",
                "email", "email_verified", "name", "groups"
            ],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

/// `GET /authorize`, for a real browser: the user approves at once (the current user signs
/// in), and the browser is sent back to the redirect URI with `code`, `state` and `iss`; a
/// request [`MockProvider::authorize`] would refuse gets a 400 page saying why.
fn authorize_page(state: &Mutex<State>, request: &Request) -> Response {
    let issuer = lock(state).issuer.clone();
    let url = if request.query.is_empty() {
        format!("{issuer}/authorize")
    } else {
        format!("{issuer}/authorize?{}", request.query)
    };
    match authorization_params(&issuer, &url).and_then(|params| grant(state, &params)) {
        Ok(redirect) => Response {
            status: 302,
            headers: vec![("Location", redirect.url)],
            body: Vec::new(),
        },
        Err(why) => Response::page(400, "The sign-in request was refused", &why),
    }
}

/// `/jwks`: the current key, and the next one once published.
fn jwks(state: &State) -> Response {
    let mut keys = vec![state.key.jwk()];
    if state.next_published {
        keys.push(state.next_key.jwk());
    }
    Response::json(200, &json!({ "keys": keys }))
}

/// The client id and secret of `Authorization: Basic`, each form-urldecoded (RFC 6749 2.3.1):
/// `Ok(None)` without the header, `Err` when it is not a well-formed Basic credential.
fn basic_credentials(request: &Request) -> Result<Option<(String, String)>, ()> {
    let Some(value) = request.header("authorization") else {
        return Ok(None);
    };
    let (scheme, credentials) = value.split_once(' ').ok_or(())?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(());
    }
    let decoded = STANDARD.decode(credentials.trim()).map_err(|_| ())?;
    let decoded = String::from_utf8(decoded).map_err(|_| ())?;
    let (id, secret) = decoded.split_once(':').ok_or(())?;
    let id = percent_decode(id, true).ok_or(())?;
    let secret = percent_decode(secret, true).ok_or(())?;
    Ok(Some((id, secret)))
}

/// The bearer token of `Authorization`.
fn bearer(request: &Request) -> Option<&str> {
    let (scheme, token) = request.header("authorization")?.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// `POST /token`: the authorization-code grant.
fn token(state: &Mutex<State>, request: &Request) -> Response {
    let form_type = request
        .header("content-type")
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase());
    if form_type.as_deref() != Some("application/x-www-form-urlencoded") {
        return Response::error(
            400,
            "invalid_request",
            "the body must be application/x-www-form-urlencoded",
        );
    }
    let Ok(pairs) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&request.body) else {
        return Response::error(400, "invalid_request", "malformed form body");
    };
    let mut form: HashMap<String, String> = HashMap::new();
    for (name, value) in pairs {
        if form.contains_key(&name) {
            return Response::error(
                400,
                "invalid_request",
                &format!("parameter {name} given more than once"),
            );
        }
        form.insert(name, value);
    }
    let param = |name: &str| form.get(name).map(String::as_str);

    // Client authentication: exactly one method.
    let invalid_client = |why: &str, basic: bool| {
        let answer = Response::error(401, "invalid_client", why);
        if basic {
            answer.with("WWW-Authenticate", "Basic realm=\"mock\"")
        } else {
            answer
        }
    };
    let client_id = match basic_credentials(request) {
        Err(()) => return invalid_client("malformed Authorization header", true),
        Ok(Some((id, secret))) => {
            if param("client_secret").is_some() {
                return Response::error(
                    400,
                    "invalid_request",
                    "more than one client authentication method",
                );
            }
            if param("client_id").is_some_and(|body_id| body_id != id) {
                return Response::error(
                    400,
                    "invalid_request",
                    "client_id differs from the authenticated client",
                );
            }
            if id != CLIENT_ID || secret != CLIENT_SECRET {
                return invalid_client("unknown client or wrong secret", true);
            }
            id
        }
        Ok(None) => match (param("client_id"), param("client_secret")) {
            (Some(CLIENT_ID), Some(CLIENT_SECRET)) => CLIENT_ID.to_owned(),
            (Some(_), Some(_)) => return invalid_client("unknown client or wrong secret", false),
            _ => return invalid_client("client authentication missing", false),
        },
    };

    match param("grant_type") {
        Some("authorization_code") => {}
        None => return Response::error(400, "invalid_request", "grant_type missing"),
        Some(other) => {
            return Response::error(
                400,
                "unsupported_grant_type",
                &format!("grant_type {other:?} is not supported"),
            );
        }
    }
    let Some(code) = param("code") else {
        return Response::error(400, "invalid_request", "code missing");
    };

    let mut shared = lock(state);
    let grant = match shared.codes.get_mut(code) {
        None => return Response::error(400, "invalid_grant", "unknown code"),
        Some(grant) if grant.used => {
            return Response::error(400, "invalid_grant", "code already used");
        }
        Some(grant) => {
            // Used now, whatever the outcome.
            grant.used = true;
            grant.clone()
        }
    };
    if grant.issued.elapsed() > CODE_LIFETIME {
        return Response::error(400, "invalid_grant", "code expired");
    }
    if grant.client_id != client_id {
        return Response::error(400, "invalid_grant", "code issued to another client");
    }
    if param("redirect_uri") != Some(grant.redirect_uri.as_str()) {
        return Response::error(400, "invalid_grant", "redirect_uri does not match");
    }
    let Some(verifier) = param("code_verifier") else {
        return Response::error(400, "invalid_grant", "code_verifier missing");
    };
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    if !well_formed || s256(verifier) != grant.code_challenge {
        return Response::error(
            400,
            "invalid_grant",
            "code_verifier does not match code_challenge",
        );
    }

    let access_token = random_token();
    shared.tokens.insert(
        access_token.clone(),
        Access {
            user: grant.user.clone(),
        },
    );
    let mut answer = json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": 3600,
        "scope": grant.scope,
    });
    if grant.scope.split_whitespace().any(|s| s == "openid") {
        answer["id_token"] = Value::String(id_token(&shared, &grant));
    }
    Response::json(200, &answer).with("Pragma", "no-cache")
}

/// The ID token for `grant`, with the faults applied.
fn id_token(state: &State, grant: &Grant) -> String {
    let now = unix_now();
    let user = &grant.user;
    let mut claims = Map::new();
    let issuer = if state.has(&Fault::WrongIssuer) {
        EVIL_ISSUER
    } else {
        &state.issuer
    };
    claims.insert("iss".into(), json!(issuer));
    claims.insert("sub".into(), json!(user.sub));
    if state.has(&Fault::WrongAudience) {
        claims.insert("aud".into(), json!(["someone-else"]));
    } else if state.has(&Fault::WrongAzp) {
        claims.insert("aud".into(), json!(CLIENT_ID));
        claims.insert("azp".into(), json!("other"));
    } else if state.has(&Fault::ExtraAudienceNoAzp) {
        claims.insert("aud".into(), json!([CLIENT_ID, "other"]));
    } else {
        claims.insert("aud".into(), json!(CLIENT_ID));
    }
    let (exp, iat) = if state.has(&Fault::Expired) {
        (now - 3600, now - 7200)
    } else if state.has(&Fault::IssuedInFuture) {
        (now + TOKEN_LIFETIME, now + 3600)
    } else {
        (now + TOKEN_LIFETIME, now)
    };
    claims.insert("exp".into(), json!(exp));
    if !state.has(&Fault::NoIat) {
        claims.insert("iat".into(), json!(iat));
    }
    if state.has(&Fault::WrongNonce) {
        claims.insert("nonce".into(), json!("not-the-nonce"));
    } else if let (Some(nonce), false) = (&grant.nonce, state.has(&Fault::NoNonce)) {
        claims.insert("nonce".into(), json!(nonce));
    }
    if let Some(email) = &user.email {
        claims.insert("email".into(), json!(email));
    }
    claims.insert("email_verified".into(), json!(user.email_verified));
    if let Some(name) = &user.name {
        claims.insert("name".into(), json!(name));
    }
    claims.insert("groups".into(), json!(user.groups));
    sign(state, &Value::Object(claims))
}

/// Signs `claims` as an ID token, as the faults say.
fn sign(state: &State, claims: &Value) -> String {
    let jwt = if state.has(&Fault::AlgNone) {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        return format!("{header}.{payload}.");
    } else if state.has(&Fault::HmacWithPublicKey) {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(state.key.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(&state.key.point))
            .expect("HS256 signs")
    } else {
        let key = if state.has(&Fault::UnknownKid) {
            &state.next_key
        } else {
            &state.key
        };
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&key.der))
            .expect("ES256 signs with the mock's key")
    };
    if !state.has(&Fault::BadSignature) {
        return jwt;
    }
    let (message, signature) = jwt.rsplit_once('.').expect("a JWT has three parts");
    let mut signature = URL_SAFE_NO_PAD
        .decode(signature)
        .expect("jsonwebtoken's signature is base64url");
    if let Some(first) = signature.first_mut() {
        *first ^= 0x55;
    }
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The user an access token grants, or the 401 answer.
fn authorized(state: &Mutex<State>, request: &Request) -> Result<MockUser, Response> {
    let unauthorized = |why: &str| {
        Response::error(401, "invalid_token", why)
            .with("WWW-Authenticate", "Bearer error=\"invalid_token\"")
    };
    let token = bearer(request).ok_or_else(|| unauthorized("bearer token missing"))?;
    lock(state)
        .tokens
        .get(token)
        .map(|access| access.user.clone())
        .ok_or_else(|| unauthorized("unknown access token"))
}

/// `/userinfo`.
fn userinfo(state: &Mutex<State>, request: &Request) -> Response {
    let user = match authorized(state, request) {
        Ok(user) => user,
        Err(answer) => return answer,
    };
    let sub = if lock(state).has(&Fault::UserinfoSubject) {
        "someone-else".to_owned()
    } else {
        user.sub
    };
    Response::json(
        200,
        &json!({
            "sub": sub,
            "email": user.email,
            "email_verified": user.email_verified,
            "name": user.name,
            "groups": user.groups,
        }),
    )
}

/// The OAuth 2.0 providers' user endpoints (GitHub, Discord, Facebook).
fn oauth_user(state: &Mutex<State>, request: &Request) -> Response {
    let user = match authorized(state, request) {
        Ok(user) => user,
        Err(answer) => return answer,
    };
    let body = match request.path.as_str() {
        "/github/user" => json!({
            "id": user.sub.parse::<u64>().unwrap_or(4242),
            "login": user.login(),
            "name": user.name,
            "email": user.email.as_ref().filter(|_| user.email_verified),
        }),
        "/github/user/emails" => match &user.email {
            Some(email) => json!([{
                "email": email,
                "primary": true,
                "verified": user.email_verified,
            }]),
            None => json!([]),
        },
        "/discord/users/@me" => json!({
            "id": user.sub,
            "username": user.login(),
            "email": user.email,
            "verified": user.email_verified,
        }),
        _ => json!({
            "id": user.sub,
            "name": user.name,
            "email": user.email,
        }),
    };
    Response::json(200, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::jwk::JwkSet;
    use jsonwebtoken::{DecodingKey, Validation};

    const REDIRECT: &str = "http://127.0.0.1:1/auth/callback";
    const VERIFIER: &str = "a-perfectly-fine-code-verifier-of-43-chars-or-more";

    /// One request on a connection of its own: status and JSON body (`Null` if not JSON).
    fn call(
        provider: &MockProvider,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Value) {
        parse_answer(&call_raw(provider, method, path, headers, body))
    }

    /// One request on a connection of its own: the whole answer, head and body.
    fn call_raw(
        provider: &MockProvider,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> String {
        let mut stream = TcpStream::connect(provider.addr).expect("connect");
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", provider.addr);
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        stream.write_all(request.as_bytes()).expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("receive");
        answer
    }

    /// The value of header `name` in an answer's `head`.
    fn header_of<'h>(head: &'h str, name: &str) -> Option<&'h str> {
        head.lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }

    fn parse_answer(answer: &str) -> (u16, Value) {
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    fn provider() -> MockProvider {
        let provider = MockProvider::start();
        provider.register_redirect(REDIRECT);
        provider
    }

    fn authorization_url(provider: &MockProvider, scope: &str, nonce: Option<&str>) -> String {
        let mut params = vec![
            ("response_type", "code".to_owned()),
            ("client_id", CLIENT_ID.to_owned()),
            ("redirect_uri", REDIRECT.to_owned()),
            ("scope", scope.to_owned()),
            ("state", "st4te".to_owned()),
            ("code_challenge", s256(VERIFIER)),
            ("code_challenge_method", "S256".to_owned()),
        ];
        if let Some(nonce) = nonce {
            params.push(("nonce", nonce.to_owned()));
        }
        let query = serde_urlencoded::to_string(&params).expect("query");
        format!("{}/authorize?{query}", provider.issuer())
    }

    /// Exchanges `code` with client_secret_post, or client_secret_basic with `basic` as the
    /// secret.
    fn exchange_with(
        provider: &MockProvider,
        code: &str,
        verifier: &str,
        basic: Option<&str>,
    ) -> (u16, Value) {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ];
        let mut headers = vec![(
            "Content-Type",
            "application/x-www-form-urlencoded".to_owned(),
        )];
        match basic {
            Some(secret) => {
                let pair = format!("{CLIENT_ID}:{secret}");
                headers.push(("Authorization", format!("Basic {}", STANDARD.encode(pair))));
            }
            None => form.extend([("client_id", CLIENT_ID), ("client_secret", CLIENT_SECRET)]),
        }
        let body = serde_urlencoded::to_string(&form).expect("form");
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        call(provider, "POST", "/token", &headers, &body)
    }

    fn exchange(provider: &MockProvider, code: &str, verifier: &str) -> (u16, Value) {
        exchange_with(provider, code, verifier, None)
    }

    /// Signs in and exchanges the code: the token answer.
    fn sign_in(provider: &MockProvider, nonce: Option<&str>) -> Value {
        let url = authorization_url(provider, "openid email profile", nonce);
        let redirect = provider.authorize(&url).expect("authorize");
        let (status, answer) = exchange(provider, &redirect.code, VERIFIER);
        assert_eq!(status, 200, "{answer}");
        answer
    }

    /// Verifies an ID token against the JWKS as a client would.
    fn verify(provider: &MockProvider, id_token: &str) -> jsonwebtoken::errors::Result<Value> {
        let (_, jwks) = call(provider, "GET", "/jwks", &[], "");
        let jwks: JwkSet = serde_json::from_value(jwks).expect("a JWKS");
        let header = jsonwebtoken::decode_header(id_token)?;
        let kid = header.kid.expect("a kid");
        let jwk = jwks.find(&kid).ok_or_else(|| {
            jsonwebtoken::errors::Error::from(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat)
        })?;
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&[CLIENT_ID]);
        validation.set_issuer(&[provider.issuer()]);
        jsonwebtoken::decode::<Value>(id_token, &DecodingKey::from_jwk(jwk)?, &validation)
            .map(|data| data.claims)
    }

    #[test]
    fn discovery_names_the_issuer_and_endpoints() {
        let provider = provider();
        let (status, doc) = call(
            &provider,
            "GET",
            "/.well-known/openid-configuration",
            &[],
            "",
        );
        assert_eq!(status, 200);
        assert_eq!(doc["issuer"], provider.issuer());
        assert_eq!(doc["jwks_uri"], format!("{}/jwks", provider.issuer()));
        assert_eq!(
            doc["id_token_signing_alg_values_supported"],
            json!(["ES256"])
        );
        assert_eq!(provider.hits("/.well-known/openid-configuration"), 1);
        assert_eq!(call(&provider, "GET", "/nowhere", &[], "").0, 404);
        assert_eq!(provider.hits("/nowhere"), 1);
    }

    #[test]
    fn keep_alive_serves_several_requests_on_one_connection() {
        let provider = provider();
        let mut stream = TcpStream::connect(provider.addr).expect("connect");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        for _ in 0..2 {
            stream
                .write_all(b"GET /jwks HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("send");
            let mut length = 0;
            let mut line = String::new();
            loop {
                line.clear();
                reader.read_line(&mut line).expect("head");
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().expect("length");
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).expect("body");
            let jwks: Value = serde_json::from_slice(&body).expect("JSON");
            assert_eq!(jwks["keys"][0]["kty"], "EC");
        }
        assert_eq!(provider.hits("/jwks"), 2);
    }

    #[test]
    fn malformed_requests_get_400() {
        let provider = provider();
        for raw in [
            "NONSENSE\r\n\r\n",
            "GET /jwks HTTP/1.1\r\nno colon here\r\n\r\n",
            "POST /token HTTP/1.1\r\nContent-Length: many\r\n\r\n",
            "GET /%zz HTTP/1.1\r\n\r\n",
        ] {
            let mut stream = TcpStream::connect(provider.addr).expect("connect");
            stream.write_all(raw.as_bytes()).expect("send");
            let mut answer = String::new();
            stream.read_to_string(&mut answer).expect("receive");
            assert_eq!(parse_answer(&answer).0, 400, "{raw:?}");
        }
        let form = [("Content-Type", "application/x-www-form-urlencoded")];
        let (status, answer) = call(&provider, "POST", "/token", &form, "code=a&code=b");
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_request"))
        );
    }

    #[test]
    fn a_code_works_once() {
        let provider = provider();
        let url = authorization_url(&provider, "openid", Some("n0nce"));
        let redirect = provider.authorize(&url).expect("authorize");
        assert_eq!(redirect.state, "st4te");
        assert_eq!(redirect.iss.as_deref(), Some(provider.issuer().as_str()));
        assert_eq!(redirect.code.len(), 32);
        assert!(redirect.url.starts_with(&format!("{REDIRECT}?code=")));
        assert_eq!(provider.issued_codes(), 1);

        let (status, answer) = exchange(&provider, &redirect.code, VERIFIER);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["token_type"], "Bearer");
        let (status, answer) = exchange(&provider, &redirect.code, VERIFIER);
        assert_eq!(status, 400);
        assert_eq!(answer["error"], "invalid_grant");
    }

    #[test]
    fn a_pkce_mismatch_is_refused_and_burns_the_code() {
        let provider = provider();
        let url = authorization_url(&provider, "openid", None);
        let redirect = provider.authorize(&url).expect("authorize");
        let wrong = "another-code-verifier-that-is-long-enough-too-yes";
        let (status, answer) = exchange(&provider, &redirect.code, wrong);
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_grant"))
        );
        let (status, _) = exchange(&provider, &redirect.code, VERIFIER);
        assert_eq!(status, 400);
    }

    #[test]
    fn authorize_checks_what_a_provider_checks() {
        let provider = provider();
        let good = authorization_url(&provider, "openid", None);
        let bad_redirect = good.replace("callback", "elsewhere");
        assert!(provider.authorize(&bad_redirect).is_err());
        let plain = good.replace("S256", "plain");
        assert!(provider.authorize(&plain).is_err());
        let other_client = good.replace(CLIENT_ID, "intruder");
        assert!(provider.authorize(&other_client).is_err());
        let no_state = good.replace("state=st4te", "state=");
        assert!(provider.authorize(&no_state).is_err());
        assert_eq!(provider.issued_codes(), 0);
    }

    #[test]
    fn get_authorize_sends_a_browser_back_with_a_code() {
        let provider = provider();
        let url = authorization_url(&provider, "openid", Some("n0nce"));
        let target = url.strip_prefix(&provider.issuer()).expect("on the issuer");
        let answer = call_raw(&provider, "GET", target, &[], "");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 302 Found\r\n"), "{head}");
        assert!(body.is_empty(), "{body}");
        let location = header_of(head, "location").expect("a Location");
        let back = url::Url::parse(location).expect("an absolute Location");
        assert_eq!(back.as_str().split('?').next(), Some(REDIRECT));
        let query: HashMap<String, String> = back.query_pairs().into_owned().collect();
        assert_eq!(query["state"], "st4te");
        assert_eq!(query["iss"], provider.issuer());
        assert_eq!(provider.issued_codes(), 1);
        assert_eq!(provider.hits("/authorize"), 1);
        let (status, tokens) = exchange(&provider, &query["code"], VERIFIER);
        assert_eq!(status, 200, "{tokens}");
        let id_token = tokens["id_token"].as_str().expect("an ID token");
        let claims = verify(&provider, id_token).expect("a valid ID token");
        assert_eq!(claims["nonce"], "n0nce");

        // What `authorize` refuses is a 400 page saying why, and mints no code.
        let unregistered = target.replace("callback", "elsewhere");
        let answer = call_raw(&provider, "GET", &unregistered, &[], "");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
        let media = header_of(head, "content-type").unwrap_or_default();
        assert!(media.starts_with("text/html"), "{media}");
        assert!(body.contains("is not registered"), "{body}");
        let twice = format!("{target}&state=again");
        assert_eq!(call(&provider, "GET", &twice, &[], "").0, 400);
        assert_eq!(call(&provider, "GET", "/authorize", &[], "").0, 400);
        assert_eq!(call(&provider, "POST", target, &[], "").0, 405);
        assert_eq!(provider.issued_codes(), 1);
    }

    #[test]
    fn client_secret_basic_is_checked() {
        let provider = provider();
        let url = authorization_url(&provider, "openid", None);
        let redirect = provider.authorize(&url).expect("authorize");
        let (status, answer) = exchange_with(&provider, &redirect.code, VERIFIER, Some("nope"));
        assert_eq!(
            (status, answer["error"].as_str()),
            (401, Some("invalid_client"))
        );

        let redirect = provider.authorize(&url).expect("authorize");
        let (status, answer) =
            exchange_with(&provider, &redirect.code, VERIFIER, Some(CLIENT_SECRET));
        assert_eq!(status, 200, "{answer}");
    }

    #[test]
    fn the_id_token_verifies_and_carries_the_nonce() {
        let provider = provider();
        let answer = sign_in(&provider, Some("n0nce"));
        let id_token = answer["id_token"].as_str().expect("an ID token");
        let claims = verify(&provider, id_token).expect("a valid ID token");
        assert_eq!(claims["nonce"], "n0nce");
        assert_eq!(claims["sub"], "1001");
        assert_eq!(claims["aud"], CLIENT_ID);
        assert_eq!(claims["email"], "ada@example.com");

        let bearer = format!("Bearer {}", answer["access_token"].as_str().expect("token"));
        let auth = [("Authorization", bearer.as_str())];
        let (status, info) = call(&provider, "GET", "/userinfo", &auth, "");
        assert_eq!((status, info["sub"].as_str()), (200, Some("1001")));
        assert_eq!(call(&provider, "GET", "/userinfo", &[], "").0, 401);
        let (status, github) = call(&provider, "GET", "/github/user", &auth, "");
        assert_eq!((status, github["id"].as_u64()), (200, Some(1001)));
        let (_, me) = call(
            &provider,
            "GET",
            "/facebook/me?fields=id,name,email",
            &auth,
            "",
        );
        assert_eq!(me["name"], "Ada Lovelace");
    }

    #[test]
    fn without_openid_there_is_no_id_token() {
        let provider = provider();
        let url = authorization_url(&provider, "read:user user:email", None);
        let redirect = provider.authorize(&url).expect("authorize");
        let (status, answer) = exchange(&provider, &redirect.code, VERIFIER);
        assert_eq!(status, 200);
        assert!(answer.get("id_token").is_none());
    }

    #[test]
    fn faults_change_the_id_token() {
        let provider = provider();
        provider.fault(Fault::WrongAudience);
        let answer = sign_in(&provider, Some("n0nce"));
        let id_token = answer["id_token"].as_str().expect("an ID token");
        assert!(verify(&provider, id_token).is_err());
        let claims = jsonwebtoken::dangerous::insecure_decode::<Value>(id_token)
            .expect("decodes")
            .claims;
        assert_eq!(claims["aud"], json!(["someone-else"]));

        provider.behave();
        provider.fault(Fault::AlgNone);
        let id_token = sign_in(&provider, None)["id_token"]
            .as_str()
            .map(str::to_owned);
        assert!(id_token.expect("an ID token").ends_with('.'));

        provider.behave();
        provider.fault(Fault::HmacWithPublicKey);
        let id_token = sign_in(&provider, None)["id_token"]
            .as_str()
            .map(str::to_owned);
        let id_token = id_token.expect("an ID token");
        let point = lock(&provider.state).key.point.clone();
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[CLIENT_ID]);
        jsonwebtoken::decode::<Value>(&id_token, &DecodingKey::from_secret(&point), &validation)
            .expect("HS256 with the public key");

        provider.behave();
        provider.fault(Fault::UnknownKid);
        let id_token = sign_in(&provider, None)["id_token"]
            .as_str()
            .map(str::to_owned);
        let id_token = id_token.expect("an ID token");
        assert!(verify(&provider, &id_token).is_err());
        provider.publish_next_key();
        verify(&provider, &id_token).expect("found after publishing");

        provider.behave();
        let before = jsonwebtoken::decode_header(
            sign_in(&provider, None)["id_token"]
                .as_str()
                .expect("token"),
        )
        .expect("header")
        .kid;
        provider.rotate_keys();
        let (_, jwks) = call(&provider, "GET", "/jwks", &[], "");
        assert_eq!(jwks["keys"].as_array().map(Vec::len), Some(1));
        assert_ne!(jwks["keys"][0]["kid"], json!(before));
        let answer = sign_in(&provider, None);
        verify(&provider, answer["id_token"].as_str().expect("token")).expect("new key");
    }
}
