//! A minimal HTTP/1.1 keep-alive client over `std::net::TcpStream`, and a load driver that runs
//! several of them on threads of their own.
//!
//! It sends `GET` requests only and reads responses framed by `Content-Length` (what actix-web
//! sends for the bodies of both endpoint families); anything else is reported as an error.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// One keep-alive connection.
pub(crate) struct Client {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
    /// Extra header lines sent with every request (each ending in `\r\n`).
    extra: String,
}

fn io_err(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Client {
    /// Connects to `addr`.
    pub(crate) fn connect(addr: SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let writer = stream.try_clone()?;
        Ok(Client {
            addr,
            reader: BufReader::with_capacity(64 * 1024, stream),
            writer,
            request: Vec::with_capacity(256),
            line: String::with_capacity(256),
            body: Vec::with_capacity(64 * 1024),
            extra: String::new(),
        })
    }

    /// Sends `authorization` as the `Authorization` header of every request from now on.
    pub(crate) fn authorize(&mut self, authorization: &str) {
        self.extra = if authorization.is_empty() {
            String::new()
        } else {
            format!("Authorization: {authorization}\r\n")
        };
    }

    /// Sends `GET path` and reads the response: its status and body (valid until the next call).
    pub(crate) fn get(&mut self, path: &str) -> io::Result<(u16, &[u8])> {
        self.request.clear();
        write!(
            self.request,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n{}\r\n",
            self.addr, self.extra
        )?;
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
            }
        }
        let length = length.ok_or_else(|| io_err("no Content-Length".into()))?;
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body)?;
        if close {
            let extra = std::mem::take(&mut self.extra);
            *self = Client::connect(self.addr)?;
            self.extra = extra;
        }
        Ok((status, &self.body))
    }
}

/// The outcome of one load measurement.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Responses received with status 200.
    pub(crate) ok: u64,
    /// Responses with another status, or transport errors.
    pub(crate) errors: u64,
    /// The first error seen, if any.
    pub(crate) first_error: Option<String>,
    /// Wall time from the common start until the last connection finished.
    pub(crate) elapsed: Duration,
    /// Per-request latencies in microseconds.
    pub(crate) latencies_us: Vec<u32>,
    /// CPU time the process spent outside the client threads (the server, its SQLite threads).
    pub(crate) server_cpu: Duration,
    /// CPU time of the client threads.
    pub(crate) client_cpu: Duration,
}

impl Outcome {
    /// Adds another measurement of the same endpoint.
    pub(crate) fn merge(&mut self, other: Outcome) {
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
        self.server_cpu += other.server_cpu;
        self.client_cpu += other.client_cpu;
    }

    /// Server CPU time per successful request, in microseconds.
    pub(crate) fn cpu_us_per_request(&self) -> f64 {
        if self.ok == 0 {
            return 0.0;
        }
        // Request counts stay far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let ok = self.ok as f64;
        self.server_cpu.as_secs_f64() * 1e6 / ok
    }

    /// Successful requests per second.
    pub(crate) fn rps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            // Request counts stay far below 2^52.
            #[allow(clippy::cast_precision_loss)]
            let ok = self.ok as f64;
            ok / secs
        } else {
            0.0
        }
    }

    /// The latency at quantile `q` (0..=1), in milliseconds.
    pub(crate) fn latency_ms(&mut self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        self.latencies_us.sort_unstable();
        let last = self.latencies_us.len() - 1;
        // The index is within 0..=last by construction.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((last as f64) * q).round() as usize;
        f64::from(self.latencies_us[i.min(last)]) / 1000.0
    }
}

/// CPU time of the whole process, dead threads included (`/proc/self/stat`, in clock ticks of
/// 10 ms).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // USER_HZ is 100 on Linux.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU time of the calling thread, in nanoseconds (`/proc/thread-self/schedstat`).
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Drives `connections` keep-alive connections against `addr` until `duration` has passed or
/// `max_requests` requests were sent. Connection `k` requests `paths[(k * stride + i) % len]`
/// for its `i`-th request, so that connections spread over the paths.
pub(crate) fn run_load(
    addr: SocketAddr,
    paths: &[String],
    connections: usize,
    duration: Duration,
    max_requests: u64,
) -> Outcome {
    run_load_as(addr, paths, connections, duration, max_requests, "")
}

/// [`run_load`] with an `Authorization` header on every request (`""`: none).
pub(crate) fn run_load_as(
    addr: SocketAddr,
    paths: &[String],
    connections: usize,
    duration: Duration,
    max_requests: u64,
    authorization: &str,
) -> Outcome {
    let sent = AtomicU64::new(0);
    let barrier = Barrier::new(connections + 1);
    let start = Mutex::new(None::<Instant>);
    let stride = (paths.len() / connections.max(1)).max(1);
    let cpu_before = process_cpu();
    let results: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..connections)
            .map(|k| {
                let (sent, barrier, start) = (&sent, &barrier, &start);
                s.spawn(move || {
                    let mut out = Outcome::default();
                    let mut client = Client::connect(addr);
                    if let Ok(c) = &mut client {
                        c.authorize(authorization);
                    }
                    barrier.wait();
                    let began = start
                        .lock()
                        .map_or_else(|_| Instant::now(), |g| g.unwrap_or_else(Instant::now));
                    let deadline = began + duration;
                    let mut i = k * stride;
                    loop {
                        let c = match &mut client {
                            Ok(c) => c,
                            Err(e) => {
                                out.errors += 1;
                                out.first_error = Some(format!("connect: {e}"));
                                break;
                            }
                        };
                        if Instant::now() >= deadline
                            || sent.fetch_add(1, Ordering::Relaxed) >= max_requests
                        {
                            break;
                        }
                        let path = &paths[i % paths.len()];
                        i += 1;
                        let t0 = Instant::now();
                        match c.get(path) {
                            Ok((200, _)) => {
                                out.ok += 1;
                                let us = t0.elapsed().as_micros();
                                out.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                            }
                            Ok((status, body)) => {
                                out.errors += 1;
                                if out.first_error.is_none() {
                                    out.first_error = Some(format!(
                                        "GET {path}: {status} {}",
                                        String::from_utf8_lossy(body)
                                    ));
                                }
                            }
                            Err(e) => {
                                out.errors += 1;
                                out.first_error = Some(format!("GET {path}: {e}"));
                                break;
                            }
                        }
                    }
                    out.elapsed = began.elapsed();
                    out.client_cpu = thread_cpu().unwrap_or_default();
                    out
                })
            })
            .collect();
        if let Ok(mut g) = start.lock() {
            *g = Some(Instant::now());
        }
        barrier.wait();
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
    // A measurement lasts as long as its longest connection.
    let longest = results.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let mut total = Outcome::default();
    for r in results {
        total.merge(r);
    }
    total.elapsed = longest;
    // The client threads live inside this window; their whole CPU time is subtracted.
    if let (Some(before), Some(after)) = (cpu_before, process_cpu()) {
        total.server_cpu = after
            .saturating_sub(before)
            .saturating_sub(total.client_cpu);
    }
    total
}
