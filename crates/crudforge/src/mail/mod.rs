//! Mail (the `mail` feature), one folder plugged into the core through the seam: messages
//! enqueued as durable jobs in the caller's transaction (so a committed request's mail is
//! never lost and a rolled-back one's never leaves), sent by the jobs' workers through the
//! configured transport, rendered from templates per flow and locale. See
//! [mail.md](https://github.com/crudforge/crudforge/blob/main/docs/mail.md).
//!
//! | Module | Owns |
//! |---|---|
//! | `transport` | SMTP (`lettre`: STARTTLS or implicit TLS, a pool; plain only to a loopback sink), `.eml` files, the log |
//! | `templates` | the flows' templates: embedded defaults, files per locale, HTML auto-escaped |
//! | `flows` | the account flows beside each user blueprint: verification, e-mail change, sign-in links, their tokens and limits |
//!
//! This file holds what applications see ([`Mail`], [`flow`], [`configured`], [`link`]) and
//! the surface (the mailer's start, the job that sends one message).

mod flows;
mod smtp;
mod templates;
mod transport;

pub use flows::{allowed, verified};

use crate::api::{Api, Surface};
use crate::config::{Config, ConfigError};
use crate::db::Conn;
use crate::error::Error;
use crate::state::{ApiState, Extensions};
use futures_util::future::LocalBoxFuture;
use lettre::message::{header, Mailbox, MultiPart, SinglePart};
use lettre::Message;
use prometheus::{IntCounterVec, Opts};
use std::sync::{Arc, LazyLock};
use templates::Templates;
use transport::Transport;

/// The kind of the jobs that send mail.
const KIND: &str = "crudforge.mail";

/// How many times a mail is tried before it is kept as failed (about a day and a half of
/// backoff with the default `JOBS_RETRY_BASE`).
const ATTEMPTS: u32 = 12;

/// A message to send: recipient, subject, text and an optional HTML part.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mail {
    to: String,
    subject: String,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    html: Option<String>,
    /// The left part of its `Message-ID`, fixed when it is enqueued, so that a mail sent
    /// twice (a worker that died after the server took it) carries the same id.
    #[serde(default)]
    id: String,
}

impl Mail {
    /// A plain-text mail to `to` (an address, or `Name <address>`).
    ///
    /// # Errors
    ///
    /// 422 when `to` is not an address or the subject holds a line break (no header is ever
    /// written from a value with CR or LF in it).
    pub fn new(to: &str, subject: &str, text: &str) -> Result<Mail, Error> {
        if to.contains(['\r', '\n']) || to.parse::<Mailbox>().is_err() {
            return Err(Error::invalid_field("to", "not an e-mail address"));
        }
        if subject.contains(['\r', '\n']) {
            return Err(Error::invalid_field("subject", "a line break in a subject"));
        }
        Ok(Mail {
            to: to.to_owned(),
            subject: subject.to_owned(),
            text: text.to_owned(),
            html: None,
            id: String::new(),
        })
    }

    /// With an HTML part beside the text (`multipart/alternative`).
    #[must_use]
    pub fn html(mut self, html: &str) -> Mail {
        self.html = Some(html.to_owned());
        self
    }

    /// The recipient.
    pub fn to(&self) -> &str {
        &self.to
    }

    /// The subject.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The text part.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Enqueues the mail as a job on `conn`: in the transaction `conn` is in, it leaves only
    /// if that transaction commits. One `INSERT`. The job's number.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn enqueue(mut self, conn: &mut Conn) -> Result<i64, Error> {
        self.id = uuid::Uuid::new_v4().simple().to_string();
        crate::jobs::Job::new(KIND, &self)?
            .max_attempts(ATTEMPTS)
            .enqueue(conn)
            .await
    }
}

/// Whether this API sends mail (`MAIL_TRANSPORT` is set).
pub fn configured(state: &ApiState) -> bool {
    state.ext.get::<Arc<Mailer>>().is_some()
}

/// `MAIL_LINK_BASE` followed by `path` (`/reset-password?token=...`), if the base is set.
pub fn link(state: &ApiState, path: &str) -> Option<String> {
    state
        .config
        .ops
        .mail_link_base
        .as_deref()
        .map(|base| format!("{}{path}", base.trim_end_matches('/')))
}

/// The mail of the flow `flow` (`recovery`) to `to`, in `locale` (falling back to English),
/// rendered from its templates with `values`.
///
/// # Errors
///
/// 500 when mail is not configured or a template fails; 422 for an address that is not one.
pub fn flow(
    state: &ApiState,
    flow: &str,
    locale: Option<&str>,
    to: &str,
    values: &serde_json::Value,
) -> Result<Mail, Error> {
    let mailer = state
        .ext
        .get::<Arc<Mailer>>()
        .ok_or_else(|| Error::Internal("mail is not configured (MAIL_TRANSPORT)".to_owned()))?;
    let rendered = mailer.templates.render(flow, locale, values)?;
    let mail = Mail::new(to, &rendered.subject, &rendered.text)?;
    Ok(match rendered.html {
        Some(html) => mail.html(&html),
        None => mail,
    })
}

/// The mail of an API: transport, sender, templates.
pub(crate) struct Mailer {
    transport: Transport,
    from: Mailbox,
    templates: Templates,
    /// Whether new accounts verify their address (`MAIL_VERIFICATION`).
    verification: flows::Verification,
    /// Turns to hand a mail to the transport (`MAIL_IN_FLIGHT`).
    in_flight: Arc<tokio::sync::Semaphore>,
}

impl Mailer {
    /// Sends one enqueued mail.
    async fn send(&self, mail: &Mail) -> Result<(), Error> {
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|e| Error::Internal(format!("the recipient {:?}: {e}", mail.to)))?;
        let domain = self.from.email.domain().to_owned();
        let builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .message_id(Some(format!("<{}@{domain}>", mail.id)));
        let message = match &mail.html {
            Some(html) => builder.multipart(MultiPart::alternative_plain_html(
                mail.text.clone(),
                html.clone(),
            )),
            None => builder.singlepart(
                SinglePart::builder()
                    .header(header::ContentType::TEXT_PLAIN)
                    .body(mail.text.clone()),
            ),
        }
        .map_err(|e| Error::Internal(format!("building the mail: {e}")))?;
        // A crash between the server's acceptance and the job's recorded end sends the mail
        // again; the turn is kept until that end, so at most `MAIL_IN_FLIGHT` mails of this
        // instance are ever in that window.
        let turn = Arc::clone(&self.in_flight)
            .acquire_owned()
            .await
            .map_err(|_| Error::Internal("the mailer is closed".to_owned()))?;
        self.transport
            .send(message, &mail.text)
            .await
            .map_err(Error::Internal)?;
        crate::jobs::keep_until_ended(turn);
        Ok(())
    }
}

/// Mails handed to the transport, by outcome (`sent`, `failed`: an attempt the server
/// refused or that could not reach it; the job tries again or fails for good).
static SENT: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let sent = crate::metrics::global().register(IntCounterVec::new(
        Opts::new(
            "crudforge_mails_total",
            "Mails handed to the transport, by outcome (sent, failed).",
        ),
        &["outcome"],
    ));
    for outcome in ["sent", "failed"] {
        let _ = sent.with_label_values(&[outcome]);
    }
    sent
});

/// The mail's side of the whole API: the mailer, when `MAIL_TRANSPORT` is set, and the job
/// that sends one message.
pub(crate) struct MailSurface;

impl Surface for MailSurface {
    fn start(&self, config: &Config, ext: &mut Extensions) -> Result<(), ConfigError> {
        let ops = &config.ops;
        let Some(name) = ops.mail_transport.as_deref() else {
            return Ok(());
        };
        let from = ops
            .mail_from
            .as_deref()
            .and_then(|f| f.parse::<Mailbox>().ok())
            .ok_or_else(|| ConfigError::Invalid {
                key: "MAIL_FROM",
                expected: "an address or Name <address> (MAIL_TRANSPORT is set)",
                value: ops.mail_from.clone().unwrap_or_default(),
            })?;
        let dir = ops
            .mail_dir
            .as_deref()
            .map_or_else(|| config.db.data_dir.join("mail"), std::path::PathBuf::from);
        let transport = Transport::from_settings(name, ops.smtp_url.as_deref(), dir)?;
        let templates_dir = ops.mail_templates_dir.as_deref().map(std::path::Path::new);
        let templates = Templates::load(templates_dir).map_err(|value| ConfigError::Invalid {
            key: "MAIL_TEMPLATES_DIR",
            expected: "a folder of templates that parse",
            value,
        })?;
        let verification = flows::Verification::parse(ops.mail_verification.as_deref())
            .ok_or_else(|| ConfigError::Invalid {
                key: "MAIL_VERIFICATION",
                expected: "off, optional or required",
                value: ops.mail_verification.clone().unwrap_or_default(),
            })?;
        LazyLock::force(&SENT);
        let in_flight = usize::try_from(ops.mail_in_flight.max(1)).unwrap_or(1);
        ext.insert(Arc::new(Mailer {
            transport,
            from,
            templates,
            verification,
            in_flight: Arc::new(tokio::sync::Semaphore::new(in_flight)),
        }));
        Ok(())
    }

    fn register(&self, api: &Api, cfg: &mut actix_web::web::ServiceConfig) {
        let Some(mailer) = api.state().ext.get::<Arc<Mailer>>() else {
            return;
        };
        let sign_in = api.config().ops.mail_sign_in;
        for face in crate::users::accounts(api) {
            for route in flows::routes(&face, mailer, sign_in) {
                let path = format!("{}{}", face.prefix, route.path);
                cfg.service(actix_web::web::resource(path).route((route.route)()));
            }
        }
    }

    fn document(&self, api: &Api, doc: &mut crate::openapi::ApiDoc) {
        let Some(mailer) = api.state().ext.get::<Arc<Mailer>>() else {
            return;
        };
        let sign_in = api.config().ops.mail_sign_in;
        for face in crate::users::accounts(api) {
            let routes = flows::routes(&face, mailer, sign_in);
            crate::crud::mount::docs::custom::document_routes(
                doc,
                &face.prefix,
                &face.tag,
                &routes,
            );
            if mailer.verification == flows::Verification::Required {
                let (status, refused) =
                    crate::openapi::problem_response(doc, actix_web::http::StatusCode::FORBIDDEN);
                let login = format!("{}login/", face.prefix);
                if let Some(op) = doc.operation_mut(&login, apistos::paths::OperationType::Post) {
                    op.responses.responses.insert(status, refused);
                }
            }
        }
    }

    fn account_created<'a>(
        &self,
        state: &'a ApiState,
        conn: &'a mut Conn,
        user: uuid::Uuid,
        email: &'a str,
    ) -> Option<LocalBoxFuture<'a, Result<(), Error>>> {
        Some(Box::pin(flows::account_created(state, conn, user, email)))
    }

    fn admits<'a>(
        &self,
        state: &'a ApiState,
        user: uuid::Uuid,
        entry: crate::users::session::Entry,
    ) -> Option<LocalBoxFuture<'a, Result<(), Error>>> {
        // Only a sign-in is refused for an address not verified: a session it let in goes on.
        matches!(entry, crate::users::session::Entry::SignIn { .. })
            .then(|| Box::pin(flows::admits(state, user)) as LocalBoxFuture<'a, _>)
    }

    fn job<'a>(
        &self,
        api: &'a Api,
        kind: &str,
        payload: &'a str,
    ) -> Option<LocalBoxFuture<'a, Result<(), Error>>> {
        if kind != KIND {
            return None;
        }
        Some(Box::pin(async move {
            let mail: Mail = serde_json::from_str(payload)
                .map_err(|e| Error::Internal(format!("a mail job's payload: {e}")))?;
            let mailer = api.state().ext.get::<Arc<Mailer>>().ok_or_else(|| {
                Error::Internal("mail is not configured (MAIL_TRANSPORT)".to_owned())
            })?;
            let sent = mailer.send(&mail).await;
            let outcome = if sent.is_ok() { "sent" } else { "failed" };
            SENT.with_label_values(&[outcome]).inc();
            sent
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_in_an_address_or_subject_is_refused() {
        assert!(Mail::new("a@example.com", "Hi", "text").is_ok());
        assert!(Mail::new("Ann <a@example.com>", "Hi", "text").is_ok());
        for to in [
            "a@example.com\r\nBcc: eve@example.com",
            "not an address",
            "",
        ] {
            assert!(Mail::new(to, "Hi", "text").is_err(), "{to:?}");
        }
        assert!(Mail::new("a@example.com", "Hi\r\nBcc: eve@example.com", "t").is_err());
        assert!(Mail::new("a@example.com", "Hi\nX: y", "t").is_err());
    }
}
