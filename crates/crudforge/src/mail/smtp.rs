//! The SMTP client: `SMTP_URL` read into a server, connections to it kept between mails, and
//! each message written together with its end.
//!
//! `lettre` speaks SMTP on each connection (TLS, `STARTTLS`, login). Its own transport writes a
//! message's final `.` line apart from the message, and without `TCP_NODELAY` that line waits
//! for the server's delayed acknowledgement of the rest: about 40 ms a mail, which caps one
//! connection near 25 mails/s. Written at once, a mail costs its round trips only.

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a connection, or one mail on it, may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A connection idle this long is asked whether it is still open (`NOOP`) before a mail.
const CHECK_AFTER: Duration = Duration::from_secs(30);

/// Idle connections kept at most.
const KEEP: usize = 8;

/// How the connection to the server is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Security {
    /// `smtp://`: `STARTTLS`, required (a server that does not offer it is refused).
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Implicit,
    /// `smtp://...?tls=none`: none, to a server on a loopback address only.
    None,
}

/// An SMTP server, as `SMTP_URL` names it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Server {
    pub(crate) security: Security,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// User name and password, percent-decoded.
    pub(crate) login: Option<(String, String)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("security", &self.security)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.login.as_ref().map(|(user, _)| user))
            .finish_non_exhaustive()
    }
}

impl Server {
    /// `smtp://user:pass@host:port` (`STARTTLS` required; port 587 when none is given),
    /// `smtps://...` (implicit TLS; 465), `smtp://...?tls=none` (loopback hosts only; 25).
    ///
    /// # Errors
    ///
    /// What the setting expects.
    pub(crate) fn parse(text: &str) -> Result<Server, &'static str> {
        const EXPECTED: &str =
            "smtp://user:pass@host:port (STARTTLS) or smtps://user:pass@host:port (implicit TLS)";
        let url = url::Url::parse(text).map_err(|_| EXPECTED)?;
        let mut tls_none = false;
        for (key, value) in url.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("tls", "none") => tls_none = true,
                _ => return Err("only ?tls=none may follow the address"),
            }
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) if !name.is_empty() => name.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(EXPECTED),
        };
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return Err(EXPECTED);
        }
        let security = match (url.scheme(), tls_none) {
            ("smtp", false) => Security::StartTls,
            ("smtps", false) => Security::Implicit,
            ("smtp", true) if loopback(&host) => Security::None,
            ("smtp", true) => return Err("?tls=none only for a server on a loopback address"),
            _ => return Err(EXPECTED),
        };
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| EXPECTED)
        };
        let login = match (url.username(), url.password()) {
            ("", None) => None,
            (user, pass) => Some((decode(user)?, decode(pass.unwrap_or_default())?)),
        };
        let port = url.port().unwrap_or(match security {
            Security::StartTls => 587,
            Security::Implicit => 465,
            Security::None => 25,
        });
        Ok(Server {
            security,
            host,
            port,
            login,
        })
    }
}

/// Whether `host` is a loopback address or `localhost`.
fn loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Connections to one server: taken for a mail, put back when it went well.
pub(crate) struct Smtp {
    server: Server,
    hello: ClientId,
    idle: Mutex<Vec<(AsyncSmtpConnection, Instant)>>,
}

impl Smtp {
    /// A client of `server`; it connects at the first mail.
    pub(crate) fn new(server: Server) -> Smtp {
        Smtp {
            server,
            hello: ClientId::default(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Delivers `message` to the envelope's recipients.
    ///
    /// # Errors
    ///
    /// The connection, the login or the server's refusal, in words.
    pub(crate) async fn send(&self, envelope: &Envelope, message: &[u8]) -> Result<(), String> {
        let mut conn = self.connection().await?;
        match tokio::time::timeout(TIMEOUT, deliver(&mut conn, envelope, message)).await {
            Ok(Ok(())) => {
                if let Ok(mut idle) = self.idle.lock() {
                    if idle.len() < KEEP {
                        idle.push((conn, Instant::now()));
                    }
                }
                Ok(())
            }
            Ok(Err(e)) => {
                conn.abort().await;
                Err(e)
            }
            Err(_) => Err(format!(
                "the server did not take the mail within {} s",
                TIMEOUT.as_secs()
            )),
        }
    }

    /// A kept connection that is still open, or a new one.
    async fn connection(&self) -> Result<AsyncSmtpConnection, String> {
        loop {
            let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some((mut conn, since)) = kept else {
                break;
            };
            if since.elapsed() < CHECK_AFTER || conn.test_connected().await {
                return Ok(conn);
            }
            conn.abort().await;
        }
        tokio::time::timeout(TIMEOUT, self.connect())
            .await
            .map_err(|_| format!("connecting took longer than {} s", TIMEOUT.as_secs()))?
    }

    /// A new connection: encrypted as the URL asks, logged in when it names a user.
    async fn connect(&self) -> Result<AsyncSmtpConnection, String> {
        let server = &self.server;
        let tls = || TlsParameters::new(server.host.clone()).map_err(|e| format!("TLS: {e}"));
        let implicit = match server.security {
            Security::Implicit => Some(tls()?),
            Security::StartTls | Security::None => None,
        };
        let mut conn = AsyncSmtpConnection::connect_tokio1(
            (server.host.as_str(), server.port),
            Some(TIMEOUT),
            &self.hello,
            implicit,
            None,
        )
        .await
        .map_err(|e| format!("connecting to {}:{}: {e}", server.host, server.port))?;
        if server.security == Security::StartTls {
            // Refused when the server does not offer it: never on in the clear.
            conn.starttls(tls()?, &self.hello)
                .await
                .map_err(|e| format!("STARTTLS: {e}"))?;
        }
        if let Some((user, pass)) = &server.login {
            let credentials = Credentials::new(user.clone(), pass.clone());
            conn.auth(&[Mechanism::Plain, Mechanism::Login], &credentials)
                .await
                .map_err(|e| format!("logging in: {e}"))?;
        }
        Ok(conn)
    }
}

/// One mail on `conn`: the envelope's commands, then the message with its end in one write.
async fn deliver(
    conn: &mut AsyncSmtpConnection,
    envelope: &Envelope,
    message: &[u8],
) -> Result<(), String> {
    let needs = |conn: &AsyncSmtpConnection, extension: Extension, what: &str| {
        if conn.server_info().supports_feature(extension) {
            Ok(())
        } else {
            Err(format!("the server does not accept {what}"))
        }
    };
    let mut parameters = Vec::new();
    let mut addresses = envelope.to().iter().chain(envelope.from());
    if addresses.any(|a| !AsRef::<str>::as_ref(a).is_ascii()) {
        needs(conn, Extension::SmtpUtfEight, "addresses beyond ASCII")?;
        parameters.push(MailParameter::SmtpUtfEight);
    }
    if !message.is_ascii() {
        needs(conn, Extension::EightBitMime, "8-bit messages")?;
        parameters.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    let refused = |e: lettre::transport::smtp::Error| e.to_string();
    conn.command(Mail::new(envelope.from().cloned(), parameters))
        .await
        .map_err(refused)?;
    for to in envelope.to() {
        conn.command(Rcpt::new(to.clone(), Vec::new()))
            .await
            .map_err(refused)?;
    }
    conn.command(Data).await.map_err(refused)?;
    match std::str::from_utf8(message) {
        Ok(text) => conn.command(Ended(text)).await.map_err(refused)?,
        // Not text (never for the messages built here): as `lettre` writes it.
        Err(_) => conn.message(message).await.map_err(refused)?,
    };
    Ok(())
}

/// A message as `DATA` sends it: a line that starts with `.` gets a second one, and the
/// line `.` ends it.
struct Ended<'a>(&'a str);

impl std::fmt::Display for Ended<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, line) in self.0.split("\r\n").enumerate() {
            if i > 0 {
                f.write_str("\r\n")?;
            }
            if line.starts_with('.') {
                f.write_str(".")?;
            }
            f.write_str(line)?;
        }
        f.write_str("\r\n.\r\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_requires_starttls_and_plain_text_only_reaches_a_loopback_sink() {
        let server = Server::parse("smtp://u%40x:p%3Aw@mail.example.com:2587").unwrap();
        assert_eq!(server.security, Security::StartTls);
        assert_eq!(
            (server.host.as_str(), server.port),
            ("mail.example.com", 2587)
        );
        assert_eq!(server.login, Some(("u@x".to_owned(), "p:w".to_owned())));
        assert!(!format!("{server:?}").contains("p:w"));
        let implicit = Server::parse("smtps://u:p@mail.example.com").unwrap();
        assert_eq!(
            (implicit.security, implicit.port),
            (Security::Implicit, 465)
        );
        assert_eq!(Server::parse("smtp://mail.example.com").unwrap().port, 587);
        assert_eq!(
            Server::parse("smtp://mail.example.com").unwrap().login,
            None
        );
        for sink in [
            "smtp://127.0.0.1:2525?tls=none",
            "smtp://localhost:25?tls=none",
            "smtp://[::1]:2525?tls=none",
        ] {
            assert_eq!(
                Server::parse(sink).map(|s| s.security),
                Ok(Security::None),
                "{sink}"
            );
        }
        for refused in [
            "smtp://mail.example.com:25?tls=none",
            "smtp://10.0.0.1:25?tls=none",
            "smtp://127.0.0.1:25?tls=opportunistic",
            "http://mail.example.com",
            "mail.example.com:25",
            "smtps://:25",
            "smtp://mail.example.com/path",
        ] {
            assert!(Server::parse(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_line_that_starts_with_a_dot_is_doubled_and_the_message_ends_with_one() {
        assert_eq!(
            Ended(".a\r\nb\r\n..c\r\n.").to_string(),
            "..a\r\nb\r\n...c\r\n..\r\n.\r\n"
        );
        assert_eq!(Ended("a.b").to_string(), "a.b\r\n.\r\n");
    }
}
