//! The admin page in a real browser: `tests/e2e/admin/admin.mjs` drives headless Chromium
//! (through the pinned `playwright-core`, with `axe-core` injected) through the reference
//! application's `/admin/` on SQLite, and on PostgreSQL when configured: sign-in, list,
//! filters, a create refused then accepted, an edit with a stale `If-Match`, delete and
//! restore, batch delete, a role grant, the XSS case, an accessibility check, the Jobs view (a
//! schedule run now, its job cancelled and retried, the state filter), the API keys view (a
//! key limited to one read created, listed, exchanged and revoked), an ordinary
//! user's narrower view and a domain administrator's (no more than an ordinary user's), a
//! sign-in through a provider (the loopback [`MockProvider`], whose `/authorize` sends the
//! browser back to `/admin/` at once) as a new account made an administrator by its `groups`
//! claim, and last the second factors: a sign-in with a password then a code (TOTP, computed
//! by the script; a wrong one refused first), a passkey registered in Chromium's virtual
//! authenticator then asked after a password and signing in alone, and a member of a domain
//! whose members must have a factor (`AUTH_FACTOR_DOMAINS`, no grace period) enrolling its
//! first one on the page.
//! Skipped with a message where Chromium or the npm tools are missing; mandatory with
//! `CRUDFORGE_REQUIRE_BROWSER=1` and `CRUDFORGE_REQUIRE_TOOLS=1`.
//!
//! With `CRUDFORGE_ADMIN_SCREENSHOTS=1` the screenshots (`list.png`, `form.png`) are written
//! to `docs/admin/`; otherwise to a temporary folder.

use crate::harness::{chromium, create_user, free_port, Server};
use crudforge_tests::oidc::{MockProvider, MockUser, CLIENT_ID, CLIENT_SECRET};
use crudforge_tests::tools;
use std::path::PathBuf;
use std::process::Command;

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "admin pass phrase";
/// The sign-in provider's name in `AUTH_PROVIDERS`.
const PROVIDER: &str = "mock";
/// Who signs in at the provider: a new person, not the administrator above (linking an
/// existing account whose address was never verified would clear its password, by design).
const PROVIDER_EMAIL: &str = "oidc-admin@example.com";
/// The domain whose members must have a second factor (`AUTH_FACTOR_DOMAINS`), at once: the
/// script makes it, and a member who enrolls one through the page.
const FACTOR_DOMAIN: &str = "Vault";

/// One database to run on: its name, the server's environment, and the PostgreSQL database
/// kept alive while it runs.
struct Setup {
    name: &'static str,
    env: Vec<(&'static str, String)>,
    _db: Option<crudforge_tests::TestDb>,
}

/// The settings of the sign-in provider `mock` for a server at `base`: the reference
/// application's administrators' role (`ADMIN`, every domain) for the `admins` group.
fn provider_env(mock: &MockProvider, base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AUTH_PROVIDERS", PROVIDER.to_owned()),
        ("AUTH_PROVIDER_MOCK_ISSUER", mock.issuer()),
        ("AUTH_PROVIDER_MOCK_CLIENT_ID", CLIENT_ID.to_owned()),
        ("AUTH_PROVIDER_MOCK_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ("AUTH_PROVIDER_MOCK_ROLES", "groups:admins=ADMIN".to_owned()),
        ("AUTH_RETURN_ORIGINS", base.to_owned()),
    ]
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
    // The provider approves at once whoever asks, as this user.
    let mock = MockProvider::start();
    mock.set_user(MockUser {
        sub: "oidc-admin-1".to_owned(),
        email: Some(PROVIDER_EMAIL.to_owned()),
        email_verified: true,
        name: Some("OIDC Admin".to_owned()),
        groups: vec!["admins".to_owned()],
    });
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
        // The server's address is in its settings (AUTH_RETURN_ORIGINS) and registered at the
        // provider (the admin page is the redirect URI): its port is chosen first.
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        mock.register_redirect(&format!("{base}/admin/"));
        let mut server_env = env.clone();
        server_env.extend(provider_env(&mock, &base));
        server_env.push(("AUTH_FACTOR_DOMAINS", FACTOR_DOMAIN.to_owned()));
        server_env.push(("AUTH_FACTOR_GRACE_SECONDS", "0".to_owned()));
        // Passkeys for the page at localhost (an IP address cannot be a relying party's id).
        server_env.push(("AUTH_PASSKEY_ORIGINS", format!("http://localhost:{port}")));
        let server = Server::start_on(dir.path(), &server_env, port);
        let authorized = mock.hits("/authorize");
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
                .arg(PROVIDER)
                .arg(PROVIDER_EMAIL)
                .arg(FACTOR_DOMAIN)
                .env("CRUDFORGE_TOOLS_DIR", tools::tools_dir())
                .env("CRUDFORGE_CHROMIUM", &browser),
        );
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        // The steps and the measured render time, for the test's output.
        eprintln!("[{name}]\n{said}{}", String::from_utf8_lossy(&out.stderr));
        tools::check(&format!("[{name}] the admin page's browser test"), &out);
        assert!(said.contains("admin e2e complete"), "[{name}] {said}");
        assert!(!said.contains("FAILED"), "[{name}] {said}");
        assert!(said.contains("ok provider sign-in"), "[{name}] {said}");
        assert!(said.contains("ok second factor sign-in"), "[{name}] {said}");
        assert!(said.contains("ok passkey sign-in"), "[{name}] {said}");
        assert!(
            said.contains("ok second factor enrollment"),
            "[{name}] {said}"
        );
        assert_eq!(
            mock.hits("/authorize"),
            authorized + 1,
            "[{name}] the browser went to the provider once"
        );
        for shot in ["list.png", "form.png"] {
            let len = std::fs::metadata(shots.join(shot))
                .map(|m| m.len())
                .unwrap_or(0);
            assert!(len > 0, "[{name}] no screenshot {shot}");
        }
    }
}
