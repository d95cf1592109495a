//! Mail survives a server killed mid-run: 10,000 mails enqueued in committed transactions (and
//! one in a rolled-back transaction), the reference server killed with SIGKILL at 20 points
//! while its workers send them to a loopback SMTP sink, and started again each time. Every
//! committed mail arrives, a mail sent twice carries the same `Message-ID`, and the rolled-back
//! mail never leaves. A mail is sent twice only when the kill falls between the server's
//! acceptance of it and the job's end; one instance has at most `MAIL_IN_FLIGHT` (1, the
//! default) mails in that window whatever its workers (4 here), so at most one is doubled a
//! kill.

use crate::harness::{postgres_db, Server};
use crudforge::db::TxMode;
use crudforge::mail::Mail;
use crudforge::{Config, Database, Error};
use crudforge_tests::smtp::SmtpSink;
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::Duration;

const MAILS: usize = 10_000;
const KILLS: usize = 20;
/// The jobs one instance runs at once (`JOBS_WORKERS`' default); its mails still leave one
/// at a time (`MAIL_IN_FLIGHT`'s default).
const WORKERS: usize = 4;

/// Enqueues the mails with the library, as a request's transaction would: in committed
/// transactions of 500, and one in a transaction that rolls back.
async fn enqueue(env: &[(&str, String)]) {
    let config = Config::from_lookup(|k| {
        env.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
    })
    .unwrap();
    let db = Database::connect(&config).await.unwrap();
    db.run_migrations(None).await.unwrap();
    let mut conn = db.get().await.unwrap();
    for batch in 0..MAILS / 500 {
        conn.begin(TxMode::Write).await.unwrap();
        let mut outcome = Ok(());
        for i in batch * 500..(batch + 1) * 500 {
            let to = format!("user{i}@example.com");
            let mail = Mail::new(&to, &format!("Mail {i}"), "text").unwrap();
            if let Err(e) = mail.enqueue(&mut conn).await {
                outcome = Err(e);
                break;
            }
        }
        conn.finish(outcome).await.unwrap();
    }
    conn.begin(TxMode::Write).await.unwrap();
    let never = Mail::new("never@example.com", "Rolled back", "text").unwrap();
    never.enqueue(&mut conn).await.unwrap();
    let rolled_back: Result<(), Error> = Err(Error::Conflict("the request failed".into()));
    assert!(conn.finish(rolled_back).await.is_err());
}

fn run(env: Vec<(&'static str, String)>, dir: &std::path::Path, sink: &SmtpSink, name: &str) {
    actix_web::rt::System::new().block_on(enqueue(&env));
    // Killed at 20 points spread over the run, started again each time.
    for k in 1..=KILLS {
        let server = Server::spawn(dir, &env, Stdio::null());
        let mark = k * MAILS / (KILLS + 1);
        let got = sink.wait_count(mark, Duration::from_secs(300));
        assert!(
            got >= mark,
            "[{name}] stalled at {got} mails before kill {k}"
        );
        drop(server); // SIGKILL
    }
    let _last = Server::spawn(dir, &env, Stdio::null());
    // Every committed mail arrives: wait for 10,000 distinct ids.
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    let messages = loop {
        let got = sink.messages();
        let ids: HashSet<_> = got.iter().filter_map(|m| m.header("Message-ID")).collect();
        if ids.len() >= MAILS || std::time::Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let mut ids_of: HashMap<String, HashSet<String>> = HashMap::new();
    for m in &messages {
        assert_eq!(m.to.len(), 1);
        let id = m.header("Message-ID").unwrap();
        ids_of.entry(m.to[0].clone()).or_default().insert(id);
    }
    assert!(
        !ids_of.contains_key("never@example.com"),
        "[{name}] a rolled-back mail left"
    );
    assert_eq!(ids_of.len(), MAILS, "[{name}] every committed mail arrived");
    for i in 0..MAILS {
        let ids = &ids_of[&format!("user{i}@example.com")];
        assert_eq!(
            ids.len(),
            1,
            "[{name}] user{i}: a mail sent twice has one Message-ID"
        );
    }
    let duplicates = messages.len() - MAILS;
    println!("[{name}] {MAILS} mails, {KILLS} kills: {duplicates} duplicates");
    assert!(
        duplicates <= KILLS,
        "[{name}] {duplicates} duplicates for {KILLS} kills: more than one a kill"
    );
}

/// The server's settings for a run to `sink` with its data in `dir`.
fn settings(dir: &std::path::Path, sink: &SmtpSink) -> Vec<(&'static str, String)> {
    vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        ("CRUDFORGE_DATA_DIR", dir.join("data").display().to_string()),
        ("MAIL_TRANSPORT", "smtp".to_owned()),
        ("SMTP_URL", sink.url()),
        (
            "MAIL_FROM",
            "Critters <noreply@critters.example>".to_owned(),
        ),
        ("JOBS_WORKERS", WORKERS.to_string()),
        // A killed worker's claims run out within two seconds, and a failed send is tried
        // again a second later.
        ("JOBS_LEASE_SECONDS", "2".to_owned()),
        ("JOBS_RETRY_BASE", "1".to_owned()),
    ]
}

#[test]
fn sqlite_no_committed_mail_is_lost_when_the_server_is_killed() {
    let sink = SmtpSink::start();
    let dir = tempfile::tempdir().unwrap();
    run(settings(dir.path(), &sink), dir.path(), &sink, "sqlite");
}

#[test]
fn postgres_no_committed_mail_is_lost_when_the_server_is_killed() {
    let Some(db) = postgres_db() else {
        return;
    };
    let sink = SmtpSink::start();
    let dir = tempfile::tempdir().unwrap();
    let mut env = settings(dir.path(), &sink);
    env.push(("ORM_DATABASE_URI", db.uri.clone()));
    run(env, dir.path(), &sink, "postgres");
}
