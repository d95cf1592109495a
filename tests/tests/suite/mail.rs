//! Mail on both backends, through a real SMTP conversation with a loopback sink: a mail
//! enqueued in a committed transaction arrives (text and HTML, its `Message-ID` on the
//! sender's domain) and one in a rolled-back transaction never leaves; a mail sent again
//! carries the same `Message-ID`; an unreachable server leaves the mail queued for a retry
//! with the error; the file transport writes `.eml` files; the flows' templates render with
//! the link base; malformed settings are refused when the API is built; a mailed sign-in link
//! of an account with a second factor answers its challenge, not tokens.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::db::TxMode;
use crudforge::jobs::JobState;
use crudforge::mail::{self, Mail};
use crudforge::{with_conn, Api, Config, Error};
use crudforge_tests::smtp::SmtpSink;
use crudforge_tests::{backend_tests, TestDb};
use diesel_async::SimpleAsyncConnection;
use serde_json::json;

fn smtp(t: &TestDb, url: &str) -> Config {
    let url = url.to_owned();
    t.config().with(move |c| {
        c.ops.mail_transport = Some("smtp".to_owned());
        c.ops.smtp_url = Some(url);
        c.ops.mail_from = Some("Critters <noreply@critters.example>".to_owned());
        c.ops.mail_link_base = Some("https://app.example.com/".to_owned());
    })
}

async fn api(t: &TestDb, config: Config) -> Api {
    let db = t.open(&config).await;
    Api::new(config, db).unwrap()
}

/// The mail jobs of `api` (the server's own periodic jobs left out).
async fn mail_jobs(api: &Api) -> Vec<crudforge::jobs::JobRow> {
    let all = api.jobs(None, 100).await.unwrap();
    all.into_iter()
        .filter(|j| j.kind == "crudforge.mail")
        .collect()
}

backend_tests! {
    async fn only_a_committed_mail_leaves_and_it_arrives_whole(t) {
        let sink = SmtpSink::start();
        let api = api(&t, smtp(&t, &sink.url())).await;
        assert!(mail::configured(api.state()));
        let mut conn = api.db().get().await.unwrap();
        conn.begin(TxMode::Write).await.unwrap();
        Mail::new("ada@example.com", "Never sent", "rolled back").unwrap().enqueue(&mut conn).await.unwrap();
        let rolled_back: Result<(), Error> = Err(Error::Conflict("the request failed".into()));
        assert!(conn.finish(rolled_back).await.is_err());
        conn.begin(TxMode::Write).await.unwrap();
        let mail = Mail::new("Ada <ada@example.com>", "Welcome, Ada", "Hello in text").unwrap().html("<p>Hello in <b>HTML</b></p>");
        let queued = mail.enqueue(&mut conn).await;
        conn.finish(queued).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        let got = sink.messages();
        assert_eq!(got.len(), 1, "{got:?}");
        let m = &got[0];
        assert_eq!((m.from.as_str(), m.to.as_slice()), ("noreply@critters.example", ["ada@example.com".to_owned()].as_slice()));
        assert_eq!(m.header("Subject").as_deref(), Some("Welcome, Ada"));
        assert!(m.header("From").unwrap().contains("noreply@critters.example"));
        let id = m.header("Message-ID").unwrap();
        assert!(id.starts_with('<') && id.ends_with("@critters.example>"), "{id}");
        assert!(m.header("Content-Type").unwrap().starts_with("multipart/alternative"), "{:?}", m.header("Content-Type"));
        assert!(m.data.contains("Hello in text") && m.data.contains("<p>Hello in <b>HTML</b></p>"), "{}", m.data);
        let jobs = mail_jobs(&api).await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].state, "done");
    }

    async fn a_mail_sent_again_carries_the_same_message_id(t) {
        let sink = SmtpSink::start();
        let api = api(&t, smtp(&t, &sink.url())).await;
        let mut conn = api.db().get().await.unwrap();
        Mail::new("ada@example.com", "Once", "text").unwrap().enqueue(&mut conn).await.unwrap();
        api.run_due_jobs().await.unwrap();
        // The worker died after the server took the mail, before the job was marked done.
        with_conn!(conn, |c| c.batch_execute("UPDATE crudforge_jobs SET state = 'queued' WHERE kind = 'crudforge.mail'").await).unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        let got = sink.messages();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].header("Message-ID"), got[1].header("Message-ID"));
    }

    async fn the_login_in_the_url_reaches_the_server_and_starttls_is_never_skipped(t) {
        let sink = SmtpSink::start();
        let url = format!("smtp://ada%40critters:s%3Acret@{}?tls=none", sink.addr);
        let first = api(&t, smtp(&t, &url)).await;
        let mut conn = first.db().get().await.unwrap();
        // A line that starts with a dot, and one that is only a dot, arrive as they were.
        Mail::new("bob@example.com", "Dots", "a\n.b\n.\nc").unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        first.run_due_jobs().await.unwrap();
        assert_eq!(sink.logins(), [("ada@critters".to_owned(), "s:cret".to_owned())]);
        let got = sink.messages();
        assert_eq!(got.len(), 1);
        assert!(got[0].data.contains("\r\na\r\n.b\r\n.\r\nc"), "{:?}", got[0].data);

        // Without ?tls=none, STARTTLS is required: this sink does not offer it, so nothing is
        // sent in the clear and the mail waits with the reason.
        let strict = api(&t, smtp(&t, &format!("smtp://{}", sink.addr))).await;
        let mut conn = strict.db().get().await.unwrap();
        Mail::new("eve@example.com", "Clear", "text").unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        strict.run_due_jobs().await.unwrap();
        let job = mail_jobs(&strict).await.into_iter().find(|j| j.state != "done").unwrap();
        assert_eq!((job.state.as_str(), job.attempts), ("queued", 1), "{job:?}");
        assert!(job.last_error.as_deref().unwrap().contains("STARTTLS"), "{job:?}");
        assert_eq!(sink.count(), 1);
        assert_eq!(sink.logins().len(), 1);
    }

    async fn an_unreachable_server_leaves_the_mail_queued_with_the_error(t) {
        // A port nobody listens on: bind one and let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let api = api(&t, smtp(&t, &format!("smtp://127.0.0.1:{port}?tls=none"))).await;
        let mut conn = api.db().get().await.unwrap();
        Mail::new("ada@example.com", "Later", "text").unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        let job = &mail_jobs(&api).await[0];
        assert_eq!((job.state.as_str(), job.attempts), ("queued", 1), "{job:?}");
        assert!(job.last_error.as_deref().unwrap().contains("SMTP"), "{job:?}");
        assert_eq!(api.jobs(Some(JobState::Done), 100).await.unwrap().iter().filter(|j| j.kind == "crudforge.mail").count(), 0);
    }

    async fn the_file_transport_writes_one_eml_file_a_mail(t) {
        let dir = t.dir.path().join("outbox");
        let config = t.config().with(|c| {
            c.ops.mail_transport = Some("file".to_owned());
            c.ops.mail_dir = Some(dir.display().to_string());
            c.ops.mail_from = Some("noreply@critters.example".to_owned());
        });
        let api = api(&t, config).await;
        let mut conn = api.db().get().await.unwrap();
        Mail::new("ada@example.com", "On disk", "text").unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].extension().unwrap(), "eml");
        assert!(std::fs::read_to_string(&files[0]).unwrap().contains("Subject: On disk"));
    }

    async fn the_recovery_flow_renders_with_the_link_base(t) {
        let sink = SmtpSink::start();
        let api = api(&t, smtp(&t, &sink.url())).await;
        let st = api.state();
        let link = mail::link(st, "/reset-password?token=t0k");
        assert_eq!(link.as_deref(), Some("https://app.example.com/reset-password?token=t0k"));
        let m = mail::flow(st, "recovery", Some("fr"), "ada@example.com", &json!({"email": "<ada>", "token": "t0k", "link": link, "minutes": 120})).unwrap();
        assert_eq!(m.subject(), "Reset your password");
        assert!(m.text().contains("https://app.example.com/reset-password?token=t0k"), "{}", m.text());
        assert!(m.text().contains("Your recovery token: t0k"), "{}", m.text());
        let err = mail::flow(st, "no-such-flow", None, "ada@example.com", &json!({})).unwrap_err();
        assert!(err.to_string().contains("no mail template no-such-flow.subject"), "{err}");
    }

    async fn malformed_mail_settings_are_refused_when_the_api_is_built(t) {
        let cases = [
            (smtp(&t, "smtp://user:s3cret@mail.example.com:25?tls=none"), "SMTP_URL"),
            (smtp(&t, "http://user:s3cret@mail.example.com"), "SMTP_URL"),
            (t.config().with(|c| {
                c.ops.mail_transport = Some("pigeon".to_owned());
                c.ops.mail_from = Some("a@b.example".to_owned());
            }), "MAIL_TRANSPORT"),
            (t.config().with(|c| c.ops.mail_transport = Some("log".to_owned())), "MAIL_FROM"),
        ];
        for (config, key) in cases {
            let db = t.open(&config).await;
            let err = Api::new(config, db).err().unwrap().to_string();
            assert!(err.contains(key), "{err}");
            assert!(!err.contains("s3cret"), "no password in the error: {err}");
        }
        // Without MAIL_TRANSPORT there is no mail, and that is no error.
        let api = api(&t, t.config()).await;
        assert!(!mail::configured(api.state()));
    }
}

/// Throughput, not a test: 5,000 mails enqueued, then sent by `run_due_jobs` to the loopback
/// sink, and 5,000 jobs that do nothing run the same way; prints mails/s and the cost of one
/// job's claim and end. Run in a quiet window: `cargo test -p crudforge-tests --release --test
/// suite -- --ignored --nocapture mail::throughput`.
async fn throughput(t: TestDb) {
    const N: usize = 5_000;
    let sink = SmtpSink::start();
    let config = smtp(&t, &sink.url()).with(|c| c.ops.jobs_workers = 16);
    let db = t.open(&config).await;
    let api = Api::new(config, db)
        .unwrap()
        .job("nothing", |_ctx, _: serde_json::Value| async { Ok(()) });
    api.run_due_jobs().await.unwrap();
    let mut conn = api.db().get().await.unwrap();
    for i in 0..N {
        Mail::new(
            "ada@example.com",
            &format!("Mail {i}"),
            "A body of a few words.",
        )
        .unwrap()
        .enqueue(&mut conn)
        .await
        .unwrap();
    }
    let started = std::time::Instant::now();
    api.run_due_jobs().await.unwrap();
    let took = started.elapsed();
    assert_eq!(sink.messages().len(), N);
    println!(
        "{:?}: {N} mails in {took:?}: {:.0} mails/s",
        t.backend,
        N as f64 / took.as_secs_f64()
    );
    for _ in 0..N {
        crudforge::jobs::enqueue(&mut conn, "nothing", &json!({}))
            .await
            .unwrap();
    }
    drop(conn);
    let started = std::time::Instant::now();
    api.run_due_jobs().await.unwrap();
    let took = started.elapsed();
    println!(
        "{:?}: {N} empty jobs in {took:?}: {:.0} µs a job (claim and end)",
        t.backend,
        took.as_secs_f64() * 1e6 / N as f64
    );
}

mod throughput {
    use super::*;

    crudforge_tests::__if_sqlite! {
        #[actix_web::test]
        #[ignore = "a benchmark: prints figures, asserts none"]
        async fn sqlite() {
            throughput(TestDb::sqlite().await).await;
        }
    }

    crudforge_tests::__if_postgres! {
        #[actix_web::test]
        #[ignore = "a benchmark: prints figures, asserts none"]
        async fn postgres() {
            if let Some(t) = TestDb::postgres().await {
                throughput(t).await;
            }
        }
    }
}

/// The token of the link to `link` in a captured mail (soft line breaks undone).
fn mailed_token(m: &crudforge_tests::smtp::Captured, link: &str) -> String {
    let text = m.data.replace("=\r\n", "").replace("=3D", "=");
    let start = text
        .find(link)
        .unwrap_or_else(|| panic!("no {link} in {text}"))
        + link.len();
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect()
}

/// An API with sign-up on the library's user model at `/api/users/`, mail to `sink`, and
/// optional verification.
async fn sign_up_api(t: &TestDb, sink: &SmtpSink, budget: u32) -> Api {
    let config = smtp(t, &sink.url()).with(move |c| {
        c.auth.bcrypt_cost = 4;
        c.ops.mail_verification = Some("optional".to_owned());
        c.ops.mail_max_per_address = budget;
        c.ops.metrics_enabled = true;
    });
    api(t, config)
        .await
        .mount(crudforge::users::UserBlueprint::default().sign_up(&[]))
        .unwrap()
}

/// The count of mails sent so far, from `/metrics` (the process's counters, which tests
/// running beside this one may raise too).
async fn mails_sent<S, B>(app: &S) -> u64
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, body) =
        crudforge_tests::http::call(app, actix_web::test::TestRequest::get().uri("/metrics")).await;
    assert_eq!(status, 200);
    let text = String::from_utf8(body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("crudforge_mails_total{outcome=\"sent\"} "))
        .unwrap_or_else(|| panic!("no sent mails counter in {text}"))
        .trim()
        .parse()
        .unwrap()
}

/// `POST path` with `body`, anonymous: the status and the JSON answer.
async fn call<S, B>(app: &S, path: &str, body: serde_json::Value) -> (u16, serde_json::Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    crudforge_tests::http::send(
        app,
        actix_web::test::TestRequest::post()
            .uri(path)
            .set_json(body),
    )
    .await
}

backend_tests! {
    async fn a_sign_up_mails_a_verification_link_that_verifies_the_address_once(t) {
        let sink = SmtpSink::start();
        let api = sign_up_api(&t, &sink, 20).await;
        let app = actix_web::test::init_service(api.app()).await;
        let (status, created) = call(&app, "/api/users/", json!({"email": "Ann@Example.com", "password": "correct horse"})).await;
        assert_eq!(status, 201, "{created}");
        let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
        let before = mails_sent(&app).await;
        api.run_due_jobs().await.unwrap();
        assert!(mails_sent(&app).await > before, "the metric counts the mail sent");
        let got = sink.messages();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].to, ["ann@example.com"]);
        let token = mailed_token(&got[0], "https://app.example.com/verify?token=");
        // Optional: the account logs in before it is verified.
        let (status, _) = call(&app, "/api/users/login/", json!({"email": "ann@example.com", "password": "correct horse"})).await;
        assert_eq!(status, 200);
        let mut conn = api.db().get().await.unwrap();
        assert_eq!(mail::verified(&mut conn, id).await.unwrap(), Some(false));
        // The same address again: 409, and no second mail.
        let (status, _) = call(&app, "/api/users/", json!({"email": "ann@example.com", "password": "correct horse"})).await;
        assert_eq!(status, 409);
        let (status, body) = call(&app, "/api/users/verify/", json!({ "token": token })).await;
        assert_eq!((status, body["detail"].as_str()), (200, Some("The address is verified.")));
        assert_eq!(mail::verified(&mut conn, id).await.unwrap(), Some(true));
        let (status, body) = call(&app, "/api/users/verify/", json!({ "token": token })).await;
        assert_eq!(status, 401, "{body}");
        // Tokens are kept as digests: the table holds no usable link.
        let stored: Vec<String> = with_conn!(conn, |c| {
            use diesel::prelude::*;
            diesel::table! { crudforge_mail_tokens (digest) { digest -> Text, } }
            diesel_async::RunQueryDsl::load(crudforge_mail_tokens::table.select(crudforge_mail_tokens::digest), c).await
        }).unwrap();
        assert_eq!(stored.len(), 1);
        assert_ne!(stored[0], token);
        drop(conn);
        api.run_due_jobs().await.unwrap();
        assert_eq!(sink.messages().len(), 1);
    }

    async fn mails_asked_for_are_limited_per_client_address_and_per_recipient(t) {
        let sink = SmtpSink::start();
        let api = sign_up_api(&t, &sink, 3).await;
        let app = actix_web::test::init_service(api.app()).await;
        let (status, _) = call(&app, "/api/users/", json!({"email": "bo@example.com", "password": "correct horse"})).await;
        assert_eq!(status, 201);
        // Three asked for from this client address: one mail to bo (at most one a minute
        // asked for), none to the unknown address; the fourth is 429.
        for email in ["bo@example.com", "bo@example.com", "nobody@example.com"] {
            let (status, body) = call(&app, "/api/users/verify/resend/", json!({ "email": email })).await;
            assert_eq!(status, 202, "{body}");
        }
        let (status, body) = call(&app, "/api/users/verify/resend/", json!({"email": "bo@example.com"})).await;
        assert_eq!(status, 429, "{body}");
        api.run_due_jobs().await.unwrap();
        let got = sink.messages();
        assert_eq!(got.len(), 2, "the sign-up's mail and one resent: {got:?}");
        assert!(got.iter().all(|m| m.to == ["bo@example.com"]));
    }

    async fn an_unknown_verification_mode_is_refused_naming_the_key(t) {
        let config = smtp(&t, "smtp://127.0.0.1:2525?tls=none").with(|c| c.ops.mail_verification = Some("sometimes".to_owned()));
        let db = t.open(&config).await;
        let err = Api::new(config, db).err().unwrap().to_string();
        assert!(err.contains("MAIL_VERIFICATION"), "{err}");
    }
}

backend_tests! {
    async fn a_mailed_sign_in_link_asks_an_account_with_a_second_factor_for_it(t) {
        use totp_rs::Totp;
        let sink = SmtpSink::start();
        let config = smtp(&t, &sink.url()).with(|c| {
            c.auth.bcrypt_cost = 4;
            c.ops.mail_sign_in = true;
        });
        let api = api(&t, config)
            .await
            .mount(crudforge::users::UserBlueprint::default())
            .unwrap();
        crudforge::users::create_user(api.db(), "ada@example.com", "ada pass phrase", true, 4)
            .await
            .unwrap();
        let app = actix_web::test::init_service(api.app()).await;
        let (s, tokens) = call(&app, "/api/users/login/", json!({"email": "ada@example.com", "password": "ada pass phrase"})).await;
        assert_eq!(s, 200, "{tokens}");
        let access = tokens["access_token"].as_str().unwrap();
        let post = |uri: &str, body: serde_json::Value| {
            crudforge_tests::http::bearer(actix_web::test::TestRequest::post().uri(uri).set_json(body), access)
        };
        let (s, enrolled) = crudforge_tests::http::send(&app, post("/api/users/me/factors/totp/", json!({}))).await;
        assert_eq!(s, 201, "{enrolled}");
        let totp = Totp::from_url(enrolled["otpauth_url"].as_str().unwrap()).unwrap();
        let now = u64::try_from(chrono::Utc::now().timestamp()).unwrap();
        let confirm = format!("/api/users/me/factors/{}/confirm/", enrolled["id"].as_str().unwrap());
        let (s, confirmed) = crudforge_tests::http::send(&app, post(&confirm, json!({"code": totp.generate(now).to_string()}))).await;
        assert_eq!(s, 200, "{confirmed}");

        // The link proves the address, not the factor: it answers the same challenge a
        // password does, and only the ticket with a code gives tokens.
        let (s, _) = call(&app, "/api/users/sign_in/link/", json!({"email": "ada@example.com"})).await;
        assert_eq!(s, 202);
        api.run_due_jobs().await.unwrap();
        let mail = sink.messages().pop().expect("the sign-in mail");
        let token = mailed_token(&mail, "https://app.example.com/sign-in?token=");
        let (s, refused) = call(&app, "/api/users/sign_in/", json!({"token": token})).await;
        assert_eq!(s, 401, "{refused}");
        assert!(refused.get("access_token").is_none(), "{refused}");
        assert_eq!(refused["challenge"]["kind"], "second_factor", "{refused}");
        let (s, again) = call(&app, "/api/users/sign_in/", json!({"token": token})).await;
        assert_eq!(s, 401, "the link is used once: {again}");
        assert!(again.get("challenge").is_none(), "{again}");
        let ticket = refused["challenge"]["ticket"].as_str().unwrap();
        let (s, signed_in) = call(&app, "/api/users/factors/verify/", json!({"factor_ticket": ticket, "code": totp.generate(now + 30).to_string()})).await;
        assert_eq!(s, 200, "{signed_in}");
        let claims = api.state().tokens.verify(signed_in["access_token"].as_str().unwrap(), crudforge::auth::TokenKind::Access).unwrap();
        assert_eq!(claims.aal, Some(2));
    }
}
