//! How mail leaves: SMTP through `lettre` (STARTTLS required or implicit TLS, credentials, its
//! connection pool; no encryption only to a loopback sink), `.eml` files, or the log.

use crate::config::ConfigError;
use lettre::message::Message;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::net::IpAddr;
use std::path::PathBuf;

/// Where mail goes.
pub(crate) enum Transport {
    /// An SMTP server.
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// One `.eml` file a message, in a folder.
    File(AsyncFileTransport<Tokio1Executor>),
    /// The log (development).
    Log,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Smtp(_) => "Transport::Smtp",
            Transport::File(_) => "Transport::File",
            Transport::Log => "Transport::Log",
        })
    }
}

impl Transport {
    /// The transport `MAIL_TRANSPORT` names; `SMTP_URL` for `smtp`, `dir` for `file`.
    ///
    /// # Errors
    ///
    /// An unknown transport, a missing or malformed `SMTP_URL`, `tls=none` to a server that
    /// is not on a loopback address, or a folder that cannot be made.
    pub(crate) fn from_settings(
        transport: &str,
        smtp_url: Option<&str>,
        dir: PathBuf,
    ) -> Result<Transport, ConfigError> {
        match transport {
            "smtp" => {
                let url = smtp_url.ok_or_else(|| ConfigError::Invalid {
                    key: "SMTP_URL",
                    expected: "smtp://user:pass@host:port or smtps://... (MAIL_TRANSPORT=smtp)",
                    value: String::new(),
                })?;
                let lettre_url =
                    smtp_url_for_lettre(url).map_err(|expected| ConfigError::Invalid {
                        key: "SMTP_URL",
                        expected,
                        value: crate::config::value::redact_uri(url),
                    })?;
                let builder =
                    AsyncSmtpTransport::<Tokio1Executor>::from_url(&lettre_url).map_err(|_| {
                        ConfigError::Invalid {
                            key: "SMTP_URL",
                            expected: "smtp://user:pass@host:port or smtps://user:pass@host:port",
                            value: crate::config::value::redact_uri(url),
                        }
                    })?;
                Ok(Transport::Smtp(builder.build()))
            }
            "file" => {
                std::fs::create_dir_all(&dir).map_err(|_| ConfigError::Invalid {
                    key: "MAIL_DIR",
                    expected: "a folder this process can create and write",
                    value: dir.display().to_string(),
                })?;
                Ok(Transport::File(AsyncFileTransport::<Tokio1Executor>::new(
                    dir,
                )))
            }
            "log" => Ok(Transport::Log),
            other => Err(ConfigError::Invalid {
                key: "MAIL_TRANSPORT",
                expected: "smtp, file or log",
                value: other.to_owned(),
            }),
        }
    }

    /// Sends `message`; `text` is what the log transport writes.
    ///
    /// # Errors
    ///
    /// The transport's refusal, in words (the job is retried).
    pub(crate) async fn send(&self, message: Message, text: &str) -> Result<(), String> {
        match self {
            Transport::Smtp(smtp) => smtp
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| format!("SMTP: {e}")),
            Transport::File(file) => file
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| format!("writing the mail file: {e}")),
            Transport::Log => {
                let headers = message.headers();
                let get = |name: &str| headers.get_raw(name).unwrap_or_default().to_owned();
                tracing::info!(
                    target: "crudforge::mail",
                    to = %get("To"),
                    subject = %get("Subject"),
                    message_id = %get("Message-ID"),
                    body = %text,
                    "mail (MAIL_TRANSPORT=log)"
                );
                Ok(())
            }
        }
    }
}

/// `SMTP_URL` as `lettre` reads it: `smtp://` with STARTTLS required (`tls=required`),
/// `smtps://` as it is, `?tls=none` (plain `smtp://` for `lettre`) only to a loopback host.
///
/// # Errors
///
/// What the setting expects.
pub(crate) fn smtp_url_for_lettre(url: &str) -> Result<String, &'static str> {
    const EXPECTED: &str =
        "smtp://user:pass@host:port (STARTTLS) or smtps://user:pass@host:port (implicit TLS)";
    let (scheme, rest) = url.split_once("://").ok_or(EXPECTED)?;
    let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut tls_none = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair {
            "tls=none" => tls_none = true,
            _ => return Err("only ?tls=none may follow the address"),
        }
    }
    let authority = base.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    if host.is_empty() || host.contains(['\r', '\n', ' ']) {
        return Err(EXPECTED);
    }
    match (scheme, tls_none) {
        ("smtp", false) => Ok(format!("smtp://{base}?tls=required")),
        ("smtps", false) => Ok(format!("smtps://{base}")),
        ("smtp", true) if loopback(host) => Ok(format!("smtp://{base}")),
        ("smtp", true) => Err("?tls=none only for a server on a loopback address"),
        _ => Err(EXPECTED),
    }
}

/// Whether `host` is a loopback address or `localhost`.
fn loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_requires_starttls_and_plain_text_only_reaches_a_loopback_sink() {
        assert_eq!(
            smtp_url_for_lettre("smtp://u:p@mail.example.com:587"),
            Ok("smtp://u:p@mail.example.com:587?tls=required".to_owned())
        );
        assert_eq!(
            smtp_url_for_lettre("smtps://u:p@mail.example.com"),
            Ok("smtps://u:p@mail.example.com".to_owned())
        );
        for sink in [
            "smtp://127.0.0.1:2525?tls=none",
            "smtp://localhost:25?tls=none",
            "smtp://[::1]:2525?tls=none",
        ] {
            assert!(
                smtp_url_for_lettre(sink).is_ok_and(|u| !u.contains("tls=")),
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
        ] {
            assert!(smtp_url_for_lettre(refused).is_err(), "{refused}");
        }
    }
}
