//! The admin page in a real browser: `tests/e2e/admin/admin.mjs` drives headless Chromium
//! (through the pinned `playwright-core`, with `axe-core` injected) through the reference
//! application's `/admin/` on SQLite, and on PostgreSQL when configured: sign-in, list,
//! filters, a create refused then accepted, an edit with a stale `If-Match`, delete and
//! restore, batch delete, a role grant, the XSS case, an accessibility check, the Jobs view (a
//! schedule run now, its job cancelled and retried, the state filter), an ordinary
//! user's narrower view and a domain administrator's (no more than an ordinary user's). Skipped with a message where Chromium or the npm tools are missing;
//! mandatory with `CRUDFORGE_REQUIRE_BROWSER=1` and `CRUDFORGE_REQUIRE_TOOLS=1`.
//!
//! With `CRUDFORGE_ADMIN_SCREENSHOTS=1` the screenshots (`list.png`, `form.png`) are written
//! to `docs/admin/`; otherwise to a temporary folder.

use crate::harness::{chromium, create_user, Server};
use crudforge_tests::tools;
use std::path::PathBuf;
use std::process::Command;

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "admin pass phrase";

/// One database to run on: its name, the server's environment, and the PostgreSQL database
/// kept alive while it runs.
struct Setup {
    name: &'static str,
    env: Vec<(&'static str, String)>,
    _db: Option<crudforge_tests::TestDb>,
}

/// The databases to run on: SQLite always, PostgreSQL when configured.
fn databases() -> Vec<Setup> {
    let env = vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        // No job runs, so the Jobs view's job stays in the state the page puts it in.
        ("JOBS_WORKERS", "0".to_owned()),
    ];
    let mut out = vec![Setup {
        name: "sqlite",
        env: env.clone(),
        _db: None,
    }];
    if let Some(db) = crate::harness::postgres_db() {
        let mut env = env;
        env.push(("ORM_DATABASE_URI", db.uri.clone()));
        out.push(Setup {
            name: "postgres",
            env,
            _db: Some(db),
        });
    }
    out
}

#[test]
fn the_admin_page_works_in_a_real_browser() {
    let Some(browser) = chromium() else {
        return;
    };
    let Some(_) = tools::find(
        "playwright-core",
        tools::node_modules().join("playwright-core/package.json"),
        "run .ci/run, or install tests/tools/ into .tools/ as it does",
    ) else {
        return;
    };
    if Command::new("node").arg("--version").output().is_err() {
        assert!(
            !tools::tools_required(),
            "node is required (CRUDFORGE_REQUIRE_TOOLS=1) but cannot be run"
        );
        eprintln!("skipped: node is not installed");
        return;
    }
    let root = tools::workspace_root();
    let script = root.join("tests/e2e/admin/admin.mjs");
    for setup in databases() {
        let (name, env) = (setup.name, &setup.env);
        let dir = tempfile::tempdir().unwrap();
        let out = create_user(
            dir.path(),
            env,
            ADMIN_EMAIL,
            ADMIN_PASSWORD,
            &["--superadmin"],
        );
        tools::check("create-user", &out);
        let server = Server::start(dir.path(), env);
        let shots: PathBuf = if name == "sqlite"
            && std::env::var("CRUDFORGE_ADMIN_SCREENSHOTS").as_deref() == Ok("1")
        {
            root.join("docs/admin")
        } else {
            dir.path().join("shots")
        };
        std::fs::create_dir_all(&shots).unwrap();
        let out = tools::run(
            Command::new("node")
                .arg(&script)
                .arg(&server.base)
                .arg(ADMIN_EMAIL)
                .arg(ADMIN_PASSWORD)
                .arg(&shots)
                .env("CRUDFORGE_TOOLS_DIR", tools::tools_dir())
                .env("CRUDFORGE_CHROMIUM", &browser),
        );
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        // The steps and the measured render time, for the test's output.
        eprintln!("[{name}]\n{said}{}", String::from_utf8_lossy(&out.stderr));
        tools::check(&format!("[{name}] the admin page's browser test"), &out);
        assert!(said.contains("admin e2e complete"), "[{name}] {said}");
        assert!(!said.contains("FAILED"), "[{name}] {said}");
        for shot in ["list.png", "form.png"] {
            let len = std::fs::metadata(shots.join(shot))
                .map(|m| m.len())
                .unwrap_or(0);
            assert!(len > 0, "[{name}] no screenshot {shot}");
        }
    }
}
