//! Many Server-Sent Event streams held open by one thread (a single-threaded tokio runtime):
//! HTTP/1.1 over `tokio::net::TcpStream`, chunked or plain bodies, the SSE framing, and the
//! receipt time of every event whose data names a write (`"live <n>"`), or, for streams opened
//! with [`Streams::open_recording`], every row event in order (its position, name and row
//! key). Also a one-shot request helper that accepts chunked answers (PocketBase sends them).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The prefix of a written row's name; the number after it is the write's sequence number.
pub(crate) const MARK: &str = "live ";

/// How a stream subscribes.
#[derive(Debug, Clone)]
pub(crate) enum Protocol {
    /// crudforge: `GET path` with a bearer token; ready at its `ready` event.
    Crudforge {
        /// The feed's path and query.
        path: String,
        /// The access token.
        token: String,
    },
    /// PocketBase: `GET /api/realtime`, then `POST /api/realtime` with the `clientId` of its
    /// `PB_CONNECT` event and the topic; ready once that POST succeeded.
    PocketBase {
        /// The subscription topic (the collection's name).
        topic: String,
    },
}

/// What one stream received.
#[derive(Debug, Default)]
pub(crate) struct StreamOut {
    /// `(write number, microseconds since the common base)` of each event naming a write.
    pub(crate) receipts: Vec<(u32, u64)>,
    /// Other events after the stream was ready (resets, ends), by name.
    pub(crate) others: Vec<String>,
    /// Why it stopped before it was told to, if it did.
    pub(crate) error: Option<String>,
    /// Recording streams only: every event with an id and a row, in order of receipt.
    pub(crate) seen: Vec<Seen>,
}

/// One row event a recording stream received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The event's position: the number before `_` in its id.
    pub(crate) position: i64,
    /// The event's name (`created`, `updated`, …).
    pub(crate) kind: String,
    /// The row's key (the `id` member of its data).
    pub(crate) key: String,
    /// The row's `name` member, if it has one.
    pub(crate) name: Option<String>,
}

/// The row event `e` as a recording stream keeps it; `None` for an event without an id
/// (`reset`, `end`) or whose data names no row.
fn seen(e: &Event) -> Option<Seen> {
    let position = e.id.split('_').next()?.parse().ok()?;
    let v: serde_json::Value = serde_json::from_str(&e.data).ok()?;
    Some(Seen {
        position,
        kind: e.name.clone(),
        key: v["id"].as_str()?.to_owned(),
        name: v["name"].as_str().map(str::to_owned),
    })
}

/// Shared between the stream tasks and the thread that drives the benchmark.
struct Ctl {
    base: Instant,
    ready: AtomicUsize,
    delivered: AtomicU64,
    failed: Mutex<Option<String>>,
    /// Keep every row event ([`StreamOut::seen`]) instead of the receipts of writes.
    record: bool,
}

/// A set of open streams, driven by a thread of their own.
pub(crate) struct Streams {
    ctl: Arc<Ctl>,
    stop: watch::Sender<bool>,
    handle: JoinHandle<Vec<StreamOut>>,
    count: usize,
}

impl Streams {
    /// Opens `count` streams to `addr` (stream `i` as `protocol(i)`) and waits until every
    /// one is ready; `base` is the instant receipt times are counted from.
    pub(crate) fn open(
        addr: SocketAddr,
        count: usize,
        protocol: &dyn Fn(usize) -> Protocol,
        base: Instant,
    ) -> Result<Streams, String> {
        Streams::open_with(addr, count, protocol, base, false)
    }

    /// As [`Streams::open`], but each stream keeps every row event it receives, in order
    /// ([`StreamOut::seen`]), and [`Streams::delivered`] counts those.
    pub(crate) fn open_recording(
        addr: SocketAddr,
        count: usize,
        protocol: &dyn Fn(usize) -> Protocol,
        base: Instant,
    ) -> Result<Streams, String> {
        Streams::open_with(addr, count, protocol, base, true)
    }

    fn open_with(
        addr: SocketAddr,
        count: usize,
        protocol: &dyn Fn(usize) -> Protocol,
        base: Instant,
        record: bool,
    ) -> Result<Streams, String> {
        let ctl = Arc::new(Ctl {
            base,
            ready: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            failed: Mutex::new(None),
            record,
        });
        let (stop, stop_rx) = watch::channel(false);
        let protocols: Vec<Protocol> = (0..count).map(protocol).collect();
        let thread_ctl = Arc::clone(&ctl);
        let handle = std::thread::Builder::new()
            .name("sse-streams".into())
            .spawn(move || drive(addr, protocols, &thread_ctl, &stop_rx))
            .map_err(|e| format!("cannot start the stream thread: {e}"))?;
        let streams = Streams {
            ctl,
            stop,
            handle,
            count,
        };
        let until = Instant::now() + Duration::from_secs(120);
        while streams.ctl.ready.load(Ordering::SeqCst) < count {
            if let Some(e) = streams.failure() {
                let _ = streams.close();
                return Err(format!("opening the streams: {e}"));
            }
            if Instant::now() > until {
                let ready = streams.ctl.ready.load(Ordering::SeqCst);
                let _ = streams.close();
                return Err(format!("only {ready} of {count} streams ready after 120 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(streams)
    }

    /// Events naming a write received so far, over all streams.
    pub(crate) fn delivered(&self) -> u64 {
        self.ctl.delivered.load(Ordering::SeqCst)
    }

    /// The first stream that failed, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.ctl
            .failed
            .lock()
            .map_or_else(|_| Some("a stream panicked".into()), |f| f.clone())
    }

    /// How many streams it holds.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Closes every stream (the connections are dropped) and returns what each received.
    pub(crate) fn close(self) -> Result<Vec<StreamOut>, String> {
        let _ = self.stop.send(true);
        self.handle
            .join()
            .map_err(|_| "the stream thread panicked".to_owned())
    }
}

fn drive(
    addr: SocketAddr,
    protocols: Vec<Protocol>,
    ctl: &Arc<Ctl>,
    stop: &watch::Receiver<bool>,
) -> Vec<StreamOut> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            note_failure(ctl, format!("runtime: {e}"));
            return Vec::new();
        }
    };
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for (i, p) in protocols.into_iter().enumerate() {
            let ctl = Arc::clone(ctl);
            let stop = stop.clone();
            set.spawn(async move {
                let mut out = StreamOut::default();
                if let Err(e) = follow(addr, &p, &ctl, stop, &mut out).await {
                    let e = format!("stream {i}: {e}");
                    note_failure(&ctl, e.clone());
                    out.error = Some(e);
                }
                out
            });
            // Open them in small bursts: a thousand simultaneous connects overflow the
            // listen backlog.
            if i % 50 == 49 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let mut all = Vec::new();
        while let Some(r) = set.join_next().await {
            all.push(r.unwrap_or_else(|e| StreamOut {
                error: Some(format!("task: {e}")),
                ..StreamOut::default()
            }));
        }
        all
    })
}

fn note_failure(ctl: &Ctl, e: String) {
    if let Ok(mut f) = ctl.failed.lock() {
        if f.is_none() {
            *f = Some(e);
        }
    }
}

/// One event: its id, name and data.
struct Event {
    id: String,
    name: String,
    data: String,
}

/// Incremental HTTP/1.1 response reader: head, then body bytes (chunked or not), then SSE.
struct Reader {
    sock: TcpStream,
    buf: Vec<u8>,
    chunked: bool,
    /// Bytes left in the current chunk; `None` when a size line is expected next.
    left: Option<usize>,
    /// The body decoded so far, not yet split into events.
    body: Vec<u8>,
    eof: bool,
}

impl Reader {
    /// Sends the request head (and `body`) and reads the response head: status and whether
    /// the body is chunked.
    async fn request(
        addr: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Result<(Reader, u16), String> {
        let mut sock = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        sock.set_nodelay(true)
            .map_err(|e| format!("nodelay: {e}"))?;
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            ));
        } else {
            req.push_str("\r\n");
        }
        sock.write_all(req.as_bytes())
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let mut r = Reader {
            sock,
            buf: Vec::with_capacity(16 * 1024),
            chunked: false,
            left: None,
            body: Vec::new(),
            eof: false,
        };
        let end = loop {
            if let Some(i) = find(&r.buf, b"\r\n\r\n") {
                break i;
            }
            if r.fill().await? == 0 {
                return Err(format!("{method} {path}: closed inside the response head"));
            }
        };
        let head = String::from_utf8_lossy(&r.buf[..end]).into_owned();
        r.buf.drain(..end + 4);
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{method} {path}: bad status line in {head:?}"))?;
        let mut length = None;
        for line in head.lines().skip(1) {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim();
                if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
                {
                    r.chunked = true;
                } else if k.eq_ignore_ascii_case("content-length") {
                    length = v.parse::<usize>().ok();
                }
            }
        }
        if !r.chunked {
            // A plain body: its length (or the rest of the connection) is one chunk.
            r.left = Some(length.unwrap_or(usize::MAX));
        }
        Ok((r, status))
    }

    async fn fill(&mut self) -> Result<usize, String> {
        let mut tmp = [0u8; 16 * 1024];
        let n = self
            .sock
            .read(&mut tmp)
            .await
            .map_err(|e| format!("read: {e}"))?;
        self.buf.extend_from_slice(&tmp[..n]);
        if n == 0 {
            self.eof = true;
        }
        Ok(n)
    }

    /// Moves what `buf` holds of the body into `body`; `true` at the body's end.
    fn decode(&mut self) -> Result<bool, String> {
        loop {
            match self.left {
                None => {
                    let Some(i) = find(&self.buf, b"\r\n") else {
                        return Ok(false);
                    };
                    let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                    let size = line.split(';').next().unwrap_or("").trim();
                    let n = usize::from_str_radix(size, 16)
                        .map_err(|_| format!("bad chunk size {line:?}"))?;
                    self.buf.drain(..i + 2);
                    if n == 0 {
                        return Ok(true);
                    }
                    self.left = Some(n);
                }
                Some(0) => {
                    if !self.chunked {
                        return Ok(true);
                    }
                    if self.buf.len() < 2 {
                        return Ok(false);
                    }
                    self.buf.drain(..2);
                    self.left = None;
                }
                Some(n) => {
                    if self.buf.is_empty() {
                        return Ok(false);
                    }
                    let take = n.min(self.buf.len());
                    self.body.extend(self.buf.drain(..take));
                    self.left = Some(n - take);
                }
            }
        }
    }

    /// The whole body (for one-shot requests).
    async fn read_body(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if self.decode()? {
                return Ok(std::mem::take(&mut self.body));
            }
            if self.eof {
                if !self.chunked {
                    return Ok(std::mem::take(&mut self.body));
                }
                return Err("closed inside a chunked body".into());
            }
            self.fill().await?;
        }
    }

    /// The complete events received so far (those still partial stay buffered).
    fn events(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(i) = find(&self.body, b"\n\n") {
            let block = String::from_utf8_lossy(&self.body[..i]).into_owned();
            self.body.drain(..i + 2);
            let mut ev = Event {
                id: String::new(),
                name: "message".into(),
                data: String::new(),
            };
            let mut any = false;
            for line in block.lines() {
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => ev.id = value.to_owned(),
                    "event" => {
                        ev.name = value.to_owned();
                        any = true;
                    }
                    "data" => {
                        if !ev.data.is_empty() {
                            ev.data.push('\n');
                        }
                        ev.data.push_str(value);
                        any = true;
                    }
                    _ => {}
                }
            }
            if any {
                out.push(ev);
            }
        }
        out
    }

    /// The next events; an error when the stream ends.
    async fn next(&mut self) -> Result<Vec<Event>, String> {
        loop {
            let done = self.decode()?;
            let events = self.events();
            if !events.is_empty() {
                return Ok(events);
            }
            if done || self.eof {
                return Err("the stream ended".into());
            }
            if self.fill().await? == 0 && self.buf.is_empty() {
                return Err("the server closed the stream".into());
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The write number in an event's data (`"live <n>"`).
fn write_number(data: &str) -> Option<u32> {
    let at = data.find(&format!("\"{MARK}"))? + 1 + MARK.len();
    let digits: &str = &data[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

async fn follow(
    addr: SocketAddr,
    protocol: &Protocol,
    ctl: &Ctl,
    mut stop: watch::Receiver<bool>,
    out: &mut StreamOut,
) -> Result<(), String> {
    let accept = [("Accept", "text/event-stream")];
    let (mut reader, status) = match protocol {
        Protocol::Crudforge { path, token } => {
            let auth = format!("Bearer {token}");
            Reader::request(
                addr,
                "GET",
                path,
                &[accept[0], ("Authorization", &auth)],
                None,
            )
            .await?
        }
        Protocol::PocketBase { .. } => {
            Reader::request(addr, "GET", "/api/realtime", &accept, None).await?
        }
    };
    if status != 200 {
        let body = reader.read_body().await.unwrap_or_default();
        return Err(format!(
            "subscription answered {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    // Until ready: the first event.
    let first = loop {
        let events = tokio::select! {
            r = reader.next() => r?,
            _ = stop.changed() => return Ok(()),
        };
        if let Some(e) = events.into_iter().next() {
            break e;
        }
    };
    match protocol {
        Protocol::Crudforge { .. } => {
            if first.name != "ready" {
                return Err(format!("first event {:?}, not ready", first.name));
            }
        }
        Protocol::PocketBase { topic } => {
            if first.name != "PB_CONNECT" {
                return Err(format!("first event {:?}, not PB_CONNECT", first.name));
            }
            let v: serde_json::Value =
                serde_json::from_str(&first.data).map_err(|e| format!("PB_CONNECT data: {e}"))?;
            let id = v["clientId"]
                .as_str()
                .ok_or("PB_CONNECT without clientId")?;
            let body = serde_json::json!({"clientId": id, "subscriptions": [topic]}).to_string();
            let (status, answer) = request(addr, "POST", "/api/realtime", &[], Some(&body)).await?;
            if status != 204 && status != 200 {
                return Err(format!(
                    "POST /api/realtime answered {status}: {}",
                    String::from_utf8_lossy(&answer)
                ));
            }
        }
    }
    ctl.ready.fetch_add(1, Ordering::SeqCst);
    loop {
        let events = tokio::select! {
            r = reader.next() => r?,
            _ = stop.changed() => return Ok(()),
        };
        let at = u64::try_from(ctl.base.elapsed().as_micros()).unwrap_or(u64::MAX);
        for e in events {
            if ctl.record {
                if let Some(s) = seen(&e) {
                    out.seen.push(s);
                    ctl.delivered.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            match write_number(&e.data) {
                Some(n) if e.name != "reset" && e.name != "end" => {
                    out.receipts.push((n, at));
                    ctl.delivered.fetch_add(1, Ordering::Relaxed);
                }
                _ => out.others.push(e.name),
            }
        }
    }
}

/// One request on a connection of its own (`Connection: close`); any framing. Returns the
/// status and the body.
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let mut all: Vec<(&str, &str)> = vec![("Connection", "close"), ("Accept", "application/json")];
    all.extend_from_slice(headers);
    let (mut r, status) = Reader::request(addr, method, path, &all, body).await?;
    let body = r
        .read_body()
        .await
        .map_err(|e| format!("{method} {path}: {e}"))?;
    Ok((status, body))
}

/// [`request`] from a thread that has no runtime.
pub(crate) fn request_blocking(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    rt.block_on(request(addr, method, path, headers, body))
}

#[cfg(test)]
mod tests {
    use super::{seen, write_number, Event, Seen};

    #[test]
    fn finds_the_write_number() {
        assert_eq!(
            write_number(r#"{"id":"x","name":"live 4711","species":"live"}"#),
            Some(4711)
        );
        assert_eq!(write_number(r#"{"name":"other"}"#), None);
    }

    #[test]
    fn keeps_a_row_event() {
        let e = |id: &str, name: &str, data: &str| Event {
            id: id.into(),
            name: name.into(),
            data: data.into(),
        };
        assert_eq!(
            seen(&e("42_tok", "updated", r#"{"id":"k1","name":"bench 7"}"#)),
            Some(Seen {
                position: 42,
                kind: "updated".into(),
                key: "k1".into(),
                name: Some("bench 7".into()),
            })
        );
        assert_eq!(seen(&e("", "reset", r#"{"reason":"too_slow"}"#)), None);
        assert_eq!(seen(&e("43_tok", "deleted", r#"{"x":1}"#)), None);
    }
}
