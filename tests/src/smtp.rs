//! A loopback SMTP sink for tests: it speaks enough SMTP (EHLO, AUTH PLAIN, MAIL, RCPT, DATA,
//! RSET, NOOP, QUIT; no TLS) for a real client to deliver to it, and keeps every message it
//! accepts and every login it is given.

use base64::Engine as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One accepted message: its envelope and its data (dot-unstuffed, CRLF line ends).
#[derive(Debug, Clone)]
pub struct Captured {
    /// `MAIL FROM`'s address.
    pub from: String,
    /// `RCPT TO`'s addresses.
    pub to: Vec<String>,
    /// The message: headers and body.
    pub data: String,
}

impl Captured {
    /// The value of the first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if let Some(v) = value.as_mut() {
                if line.starts_with([' ', '\t']) {
                    v.push_str(line.trim_start());
                    continue;
                }
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                if n.eq_ignore_ascii_case(name) {
                    value = Some(v.trim().to_owned());
                }
            }
        }
        value
    }
}

/// A sink listening on a loopback port until it is dropped (the threads end with the
/// process).
#[derive(Debug, Clone)]
pub struct SmtpSink {
    /// Where it listens.
    pub addr: SocketAddr,
    messages: Arc<Mutex<Vec<Captured>>>,
    logins: Arc<Mutex<Vec<(String, String)>>>,
}

/// What the sessions of one sink keep.
#[derive(Clone)]
struct Kept {
    messages: Arc<Mutex<Vec<Captured>>>,
    logins: Arc<Mutex<Vec<(String, String)>>>,
}

impl SmtpSink {
    /// A sink on `127.0.0.1`, a free port.
    pub fn start() -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the SMTP sink");
        let addr = listener.local_addr().expect("the sink's address");
        let kept = Kept {
            messages: Arc::default(),
            logins: Arc::default(),
        };
        let sink = SmtpSink {
            addr,
            messages: Arc::clone(&kept.messages),
            logins: Arc::clone(&kept.logins),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let _ = session(stream, &kept);
                });
            }
        });
        sink
    }

    /// The user names and passwords clients logged in with (`AUTH PLAIN`), in order.
    pub fn logins(&self) -> Vec<(String, String)> {
        self.logins.lock().expect("sink lock").clone()
    }

    /// `SMTP_URL` for this sink (plain text, allowed because it is on a loopback address).
    pub fn url(&self) -> String {
        format!("smtp://{}?tls=none", self.addr)
    }

    /// The messages accepted so far.
    pub fn messages(&self) -> Vec<Captured> {
        self.messages.lock().expect("sink lock").clone()
    }

    /// How many messages were accepted so far.
    pub fn count(&self) -> usize {
        self.messages.lock().expect("sink lock").len()
    }

    /// Waits until at least `n` messages arrived (at most `limit`); how many did.
    pub fn wait_count(&self, n: usize, limit: Duration) -> usize {
        let until = Instant::now() + limit;
        loop {
            let got = self.count();
            if got >= n || Instant::now() > until {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until at least `n` messages arrived (at most `limit`), then gives them all.
    pub fn wait_for(&self, n: usize, limit: Duration) -> Vec<Captured> {
        let until = Instant::now() + limit;
        loop {
            let got = self.messages();
            if got.len() >= n || Instant::now() > until {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One client's conversation.
fn session(stream: TcpStream, kept: &Kept) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut lines = BufReader::new(stream);
    out.write_all(b"220 sink ESMTP\r\n")?;
    let mut from = String::new();
    let mut to = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_owned();
        let upper = command.to_ascii_uppercase();
        if upper.starts_with("EHLO") {
            out.write_all(b"250-sink\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n")?;
        } else if upper.starts_with("AUTH PLAIN ") {
            // `\0user\0password`, in base64.
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(command["AUTH PLAIN ".len()..].trim())
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&decoded).into_owned();
            let mut parts = text.split('\0').skip(1);
            match (parts.next(), parts.next()) {
                (Some(user), Some(pass)) => {
                    kept.logins
                        .lock()
                        .expect("sink lock")
                        .push((user.to_owned(), pass.to_owned()));
                    out.write_all(b"235 accepted\r\n")?;
                }
                _ => out.write_all(b"501 malformed\r\n")?,
            }
        } else if upper.starts_with("HELO") || upper.starts_with("NOOP") {
            out.write_all(b"250 OK\r\n")?;
        } else if upper.starts_with("MAIL FROM:") {
            from = address(&command["MAIL FROM:".len()..]);
            to.clear();
            out.write_all(b"250 OK\r\n")?;
        } else if upper.starts_with("RCPT TO:") {
            to.push(address(&command["RCPT TO:".len()..]));
            out.write_all(b"250 OK\r\n")?;
        } else if upper == "DATA" {
            out.write_all(b"354 end with <CRLF>.<CRLF>\r\n")?;
            let mut data = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" || line == ".\n" {
                    break;
                }
                let unstuffed = line.strip_prefix('.').unwrap_or(&line);
                data.push_str(unstuffed);
            }
            kept.messages.lock().expect("sink lock").push(Captured {
                from: from.clone(),
                to: std::mem::take(&mut to),
                data,
            });
            out.write_all(b"250 OK queued\r\n")?;
        } else if upper.starts_with("RSET") {
            to.clear();
            out.write_all(b"250 OK\r\n")?;
        } else if upper.starts_with("QUIT") {
            out.write_all(b"221 bye\r\n")?;
            return Ok(());
        } else {
            out.write_all(b"502 not implemented\r\n")?;
        }
    }
}

/// The address inside `<...>` (parameters after it dropped).
fn address(arg: &str) -> String {
    let arg = arg.trim();
    arg.strip_prefix('<')
        .and_then(|a| a.split('>').next())
        .unwrap_or(arg)
        .to_owned()
}
