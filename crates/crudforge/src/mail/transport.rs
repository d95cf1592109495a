//! How mail leaves: SMTP (`STARTTLS` required or implicit TLS, credentials, kept connections;
//! no encryption only to a loopback sink), `.eml` files, or the log.

use super::smtp::{Server, Smtp};
use crate::config::ConfigError;
use lettre::message::Message;
use lettre::{AsyncFileTransport, AsyncTransport, Tokio1Executor};
use std::path::PathBuf;

/// Where mail goes.
pub(crate) enum Transport {
    /// An SMTP server.
    Smtp(Smtp),
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
                let server = Server::parse(url).map_err(|expected| ConfigError::Invalid {
                    key: "SMTP_URL",
                    expected,
                    value: crate::config::value::redact_uri(url),
                })?;
                Ok(Transport::Smtp(Smtp::new(server)))
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
                .send(message.envelope(), &message.formatted())
                .await
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
