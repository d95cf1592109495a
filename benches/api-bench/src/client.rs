//! A minimal HTTP/1.1 keep-alive client over `std::net::TcpStream` (after `crud-bench`'s, with
//! methods, bodies, a bearer token and the `Server-Timing` header), and a load driver that runs
//! several connections on threads of their own.
//!
//! Responses must be framed by `Content-Length` (what actix-web sends); anything else is an error.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One request of a workload.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    /// `GET`, `POST`, `PATCH`.
    pub(crate) method: &'static str,
    /// Path and query string.
    pub(crate) path: String,
    /// JSON body, if any.
    pub(crate) body: Option<String>,
    /// The status a correct answer has.
    pub(crate) expect: u16,
}

impl Req {
    /// A `GET` expecting 200.
    pub(crate) fn get(path: impl Into<String>) -> Req {
        Req {
            method: "GET",
            path: path.into(),
            body: None,
            expect: 200,
        }
    }

    /// A request with a JSON body.
    pub(crate) fn json(
        method: &'static str,
        path: impl Into<String>,
        body: String,
        expect: u16,
    ) -> Req {
        Req {
            method,
            path: path.into(),
            body: Some(body),
            expect,
        }
    }
}

/// One keep-alive connection.
pub(crate) struct Client {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
    /// The `Server-Timing` header of the last response, if it had one.
    pub(crate) server_timing: Option<String>,
}

fn io_err(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Client {
    /// Connects to `addr`.
    pub(crate) fn connect(addr: SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let writer = stream.try_clone()?;
        Ok(Client {
            addr,
            reader: BufReader::with_capacity(64 * 1024, stream),
            writer,
            request: Vec::with_capacity(512),
            line: String::with_capacity(256),
            body: Vec::with_capacity(64 * 1024),
            server_timing: None,
        })
    }

    /// Sends `req` (with `Authorization: Bearer token` when given) and reads the response: its
    /// status and body (valid until the next call).
    pub(crate) fn send(&mut self, req: &Req, token: Option<&str>) -> io::Result<(u16, &[u8])> {
        self.request.clear();
        write!(
            self.request,
            "{} {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n",
            req.method, req.path, self.addr
        )?;
        if let Some(t) = token {
            write!(self.request, "Authorization: Bearer {t}\r\n")?;
        }
        match &req.body {
            Some(b) => write!(
                self.request,
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            )?,
            None => self.request.extend_from_slice(b"\r\n"),
        }
        self.writer.write_all(&self.request)?;

        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        let status: u16 = self
            .line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io_err(format!("bad status line {:?}", self.line)))?;
        let mut length = None;
        let mut close = false;
        self.server_timing = None;
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Err(io_err("the connection closed inside the headers".into()));
            }
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                return Err(io_err(format!("bad header {header:?}")));
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| io_err(format!("bad Content-Length {value:?}")))?,
                );
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(io_err(format!("unsupported Transfer-Encoding {value:?}")));
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                close = true;
            } else if name.eq_ignore_ascii_case("server-timing") {
                self.server_timing = Some(value.to_owned());
            }
        }
        let length = length.unwrap_or(0);
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body)?;
        if close {
            let timing = self.server_timing.take();
            let body = std::mem::take(&mut self.body);
            *self = Client::connect(self.addr)?;
            self.server_timing = timing;
            self.body = body;
        }
        Ok((status, &self.body))
    }

    /// Sends `req` and fails unless the status is the expected one; returns the body.
    pub(crate) fn expect(&mut self, req: &Req, token: Option<&str>) -> Result<Vec<u8>, String> {
        let (status, body) = self
            .send(req, token)
            .map_err(|e| format!("{} {}: {e}", req.method, req.path))?;
        if status != req.expect {
            return Err(format!(
                "{} {}: expected {}, got {status}: {}",
                req.method,
                req.path,
                req.expect,
                String::from_utf8_lossy(body)
            ));
        }
        Ok(body.to_vec())
    }
}

/// The outcome of one load measurement.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Responses received with the expected status.
    pub(crate) ok: u64,
    /// Of those, the ones that arrived before the window closed.
    pub(crate) ok_in_window: u64,
    /// The window: how long requests were sent.
    pub(crate) window: Duration,
    /// Responses with another status, or transport errors.
    pub(crate) errors: u64,
    /// The first error seen, if any.
    pub(crate) first_error: Option<String>,
    /// Wall time from the common start until the last connection finished.
    pub(crate) elapsed: Duration,
    /// Per-request latencies in microseconds.
    pub(crate) latencies_us: Vec<u32>,
}

impl Outcome {
    /// Successful requests per second: those answered within the window, over the window
    /// (so that requests still in flight when it closes, long ones like logins, do not
    /// stretch it).
    pub(crate) fn rps(&self) -> f64 {
        let secs = self.window.as_secs_f64();
        if secs > 0.0 {
            // Request counts stay far below 2^52.
            #[allow(clippy::cast_precision_loss)]
            let ok = self.ok_in_window as f64;
            ok / secs
        } else {
            0.0
        }
    }

    /// The latency at quantile `q` (0..=1), in milliseconds.
    pub(crate) fn latency_ms(&mut self, q: f64) -> f64 {
        quantile_ms(&mut self.latencies_us, q)
    }

    /// Fails when anything but the expected status was seen.
    pub(crate) fn check(&self, what: &str) -> Result<(), String> {
        if self.errors > 0 || self.ok == 0 {
            return Err(format!(
                "{what}: {} errors, {} successes; first error: {}",
                self.errors,
                self.ok,
                self.first_error.as_deref().unwrap_or("none")
            ));
        }
        Ok(())
    }
}

/// The value at quantile `q` (0..=1) of latencies in microseconds, in milliseconds.
pub(crate) fn quantile_ms(latencies_us: &mut [u32], q: f64) -> f64 {
    if latencies_us.is_empty() {
        return 0.0;
    }
    latencies_us.sort_unstable();
    let last = latencies_us.len() - 1;
    // The index is within 0..=last by construction.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((last as f64) * q).round() as usize;
    f64::from(latencies_us[i.min(last)]) / 1000.0
}

/// What drives a load: connection count, duration, token, and shared counters.
pub(crate) struct Load<'a> {
    /// Server address.
    pub(crate) addr: SocketAddr,
    /// Concurrent keep-alive connections.
    pub(crate) connections: usize,
    /// How long to send requests.
    pub(crate) duration: Duration,
    /// Bearer token sent with every request, if any.
    pub(crate) token: Option<&'a str>,
    /// Set to stop every connection early (also set by the first error).
    pub(crate) stop: &'a AtomicBool,
    /// Incremented on every successful response (read by the soak's sampler).
    pub(crate) done: &'a AtomicU64,
    /// At most one request per connection per this interval (0: as fast as possible).
    pub(crate) pace: Duration,
}

/// Drives the load: connection `k` sends `make(k, i)` as its `i`-th request until the time is
/// up, `stop` is set, or a response has an unexpected status (which sets `stop`).
pub(crate) fn run_load(load: &Load<'_>, make: &(dyn Fn(usize, u64) -> Req + Sync)) -> Outcome {
    let barrier = Barrier::new(load.connections);
    let results: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..load.connections)
            .map(|k| {
                let barrier = &barrier;
                s.spawn(move || connection(load, make, k, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Outcome {
                    errors: 1,
                    first_error: Some("a client thread panicked".into()),
                    ..Outcome::default()
                })
            })
            .collect()
    });
    let longest = results.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let mut total = Outcome::default();
    for r in results {
        total.ok += r.ok;
        total.ok_in_window += r.ok_in_window;
        total.errors += r.errors;
        if total.first_error.is_none() {
            total.first_error = r.first_error;
        }
        total.latencies_us.extend(r.latencies_us);
    }
    total.elapsed = longest;
    total.window = load.duration;
    total
}

fn connection(
    load: &Load<'_>,
    make: &(dyn Fn(usize, u64) -> Req + Sync),
    k: usize,
    barrier: &Barrier,
) -> Outcome {
    let mut out = Outcome::default();
    let client = Client::connect(load.addr);
    barrier.wait();
    let began = Instant::now();
    let deadline = began + load.duration;
    let mut client = match client {
        Ok(c) => c,
        Err(e) => {
            out.errors += 1;
            out.first_error = Some(format!("connect: {e}"));
            load.stop.store(true, Ordering::Relaxed);
            return out;
        }
    };
    let mut i = 0u64;
    let mut next = began;
    loop {
        let now = Instant::now();
        if now >= deadline || load.stop.load(Ordering::Relaxed) {
            break;
        }
        if !load.pace.is_zero() {
            if now < next {
                std::thread::sleep((next - now).min(deadline - now));
                continue;
            }
            next += load.pace;
        }
        let req = make(k, i);
        i += 1;
        let t0 = Instant::now();
        match client.send(&req, load.token) {
            Ok((status, _)) if status == req.expect => {
                out.ok += 1;
                if Instant::now() <= deadline {
                    out.ok_in_window += 1;
                }
                load.done.fetch_add(1, Ordering::Relaxed);
                let us = t0.elapsed().as_micros();
                out.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
            }
            Ok((status, body)) => {
                out.errors += 1;
                out.first_error = Some(format!(
                    "{} {}: expected {}, got {status}: {}",
                    req.method,
                    req.path,
                    req.expect,
                    String::from_utf8_lossy(body)
                ));
                load.stop.store(true, Ordering::Relaxed);
                break;
            }
            Err(e) => {
                out.errors += 1;
                out.first_error = Some(format!("{} {}: {e}", req.method, req.path));
                load.stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    out.elapsed = began.elapsed();
    out
}
