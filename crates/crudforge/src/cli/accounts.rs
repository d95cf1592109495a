//! `create-user` and `create-token`, and where their secrets come from: standard input or
//! the environment, so that they need not appear in the process list.

use super::journal::{Change, Journal, USERS, USER_ROLES};
use super::{BoxError, Console, UserHook};
use crate::config::Config;
use crate::db::tx::{self, TxMode};
use crate::db::Database;
use crate::users::{self, Role};
use uuid::Uuid;

/// The environment variable `create-user` reads the password from.
pub(crate) const PASSWORD_VAR: &str = "CRUDFORGE_PASSWORD";

/// The environment variable `create-token` reads the token from.
pub(crate) const TOKEN_VAR: &str = "CRUDFORGE_TOKEN";

/// What `create-user` writes.
pub(crate) struct NewUser<'a, U> {
    pub(crate) email: &'a str,
    pub(crate) password: &'a str,
    pub(crate) enabled: bool,
    pub(crate) roles: Vec<Role>,
    /// The application's own options, for its hook.
    pub(crate) extra: U,
}

/// The password of `create-user`: the first line of standard input with `--password-stdin`,
/// else `CRUDFORGE_PASSWORD`. A password on the command line is refused, never used: every
/// local user sees a process's arguments.
///
/// # Errors
///
/// A password given on the command line, none given, or standard input unreadable.
pub(crate) fn password(
    console: &mut Console,
    on_argv: bool,
    from_stdin: bool,
) -> Result<String, BoxError> {
    if on_argv {
        return Err(format!(
            "--password is refused: the command line is visible to every local user; \
             pipe the password with --password-stdin or set {PASSWORD_VAR}"
        )
        .into());
    }
    if from_stdin {
        return console.read_line();
    }
    match std::env::var(PASSWORD_VAR) {
        Ok(v) => Ok(v),
        Err(_) => Err(format!(
            "give the password on standard input with --password-stdin, or in {PASSWORD_VAR}"
        )
        .into()),
    }
}

/// The value of `create-token`: the first line of standard input with `--token-stdin`, else
/// `CRUDFORGE_TOKEN`. A token on the command line is refused, never used, as a password is.
///
/// # Errors
///
/// A token given on the command line, none given, or standard input unreadable.
pub(crate) fn token(
    console: &mut Console,
    on_argv: bool,
    from_stdin: bool,
) -> Result<String, BoxError> {
    if on_argv {
        return Err(format!(
            "--token is refused: the command line is visible to every local user; \
             pipe the token with --token-stdin or set {TOKEN_VAR}"
        )
        .into());
    }
    if from_stdin {
        return console.read_line();
    }
    match std::env::var(TOKEN_VAR) {
        Ok(v) => Ok(v),
        Err(_) => Err(format!(
            "give the token on standard input with --token-stdin, or in {TOKEN_VAR}"
        )
        .into()),
    }
}

/// Creates a user with its unscoped roles, and whatever the application's hook writes, in one
/// transaction: the password is checked and hashed first, then either everything is written
/// or nothing is (a failed grant leaves no half-made account behind). The user's row and its
/// grants are recorded for `feeds`, in the same transaction.
///
/// # Errors
///
/// A malformed e-mail address or a password the policy refuses, an address already taken,
/// the hook's refusal, database errors; each as one line.
pub(crate) async fn create_user<U>(
    db: &Database,
    config: &Config,
    user: NewUser<'_, U>,
    hook: Option<&UserHook<U>>,
    feeds: &Journal,
) -> Result<Uuid, BoxError> {
    let email = user.email;
    let hash = users::new_user_hash(email, user.password, config.password_policy())
        .await
        .map_err(|e| e.problem().detail)?;
    let mut conn = db.get().await?;
    tx::begin(&mut conn, TxMode::Write).await?;
    let work = async {
        let id = users::create_user_in(&mut conn, email, Some(&hash), user.enabled).await?;
        feeds.record(&mut conn, USERS, Change::Created, id).await?;
        if let Some(hook) = hook {
            hook(&mut conn, id, user.extra).await?;
        }
        for role in &user.roles {
            let grant = users::grant_role_in(&mut conn, id, role.as_str(), None).await?;
            feeds
                .record(&mut conn, USER_ROLES, Change::Created, grant)
                .await?;
        }
        Ok(id)
    }
    .await;
    tx::finish(&mut conn, work).await.map_err(|e| -> BoxError {
        if e.problem().status == 409 {
            format!("a user with e-mail {email} already exists").into()
        } else {
            e.problem().detail.into()
        }
    })
}

/// Stores a token (API key) for the user with e-mail `email`.
///
/// # Errors
///
/// No such user, a value already stored or too short, database errors; each as one line.
pub(crate) async fn create_token(
    db: &Database,
    email: &str,
    token: &str,
    description: Option<&str>,
) -> Result<(), BoxError> {
    let (user, _, _) = users::find_by_email(db, email)
        .await?
        .ok_or_else(|| format!("no user with e-mail {email}"))?;
    users::store_token(
        db,
        users::TokenRecord::ApiKey,
        user,
        token,
        description,
        None,
    )
    .await
    .map_err(|e| -> BoxError {
        if e.problem().status == 409 {
            "that token value is already stored".into()
        } else {
            e.problem().detail.into()
        }
    })?;
    Ok(())
}
