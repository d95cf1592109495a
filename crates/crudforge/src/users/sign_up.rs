//! Sign-up: public registration as an option of the user blueprint, with its own rule of
//! which members a self-registering caller may send, its throttle per client address, and the
//! uniform answer that does not tell whether an address was taken.

use super::model::UserModel;
use crate::auth::{current_user, CurrentUser};
use crate::crud::hooks::{AroundPost, PostAnswer};
use crate::error::Error;
use crate::mount::Mount;
use crate::openapi::{json_response, problem_response, ApiDoc};
use crate::perms::{Access, Rules};
use crate::state::ApiState;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The members every sign-up may send.
pub(crate) const ALWAYS: [&str; 2] = ["email", "password"];

/// The rules of a user blueprint with sign-up: `POST` is open to everyone, and a caller who
/// is not an administrator may send only the sign-up members (anything else is 422 naming
/// it); everything else, and everything administrators do, is decided by the model's own
/// rules (`inner`).
pub(crate) struct SignUpRules<U> {
    pub(crate) inner: Arc<dyn Rules<U>>,
    /// What a self-registering caller may send besides [`ALWAYS`].
    pub(crate) members: Vec<&'static str>,
}

impl<U> SignUpRules<U> {
    fn allowed(&self) -> impl Iterator<Item = &str> + '_ {
        ALWAYS.iter().copied().chain(self.members.iter().copied())
    }
}

impl<U: 'static> Rules<U> for SignUpRules<U> {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.read(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.write(user)
    }
    fn delete(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.delete(user)
    }
    fn problems(&self) -> Vec<String> {
        self.inner.problems()
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        if user.is_some_and(CurrentUser::is_admin) {
            return self.inner.create(user, body);
        }
        // The first member outside the list, in the body's order, is named.
        if let Some(member) = body.keys().find(|k| !self.allowed().any(|a| a == *k)) {
            let allowed = self.allowed().collect::<Vec<_>>().join(", ");
            return Err(Error::invalid_field(
                member.as_str(),
                format!("cannot be set at sign-up (allowed: {allowed})"),
            ));
        }
        Ok(())
    }
    fn server_fields(&self) -> &[&'static str] {
        self.inner.server_fields()
    }
    fn admin_fields(&self) -> &[&'static str] {
        self.inner.admin_fields()
    }
    fn admin_update_fields(&self) -> &[&'static str] {
        self.inner.admin_update_fields()
    }
}

/// Checks the sign-up members of a blueprint of `U` before it is mounted: each must be a
/// member a client may send on create, and none may be one only administrators or the
/// server set.
///
/// # Errors
///
/// The first member that is not, named.
pub(crate) fn check_members<U: UserModel>(
    members: &[&'static str],
    rules: &dyn Rules<U>,
) -> Result<(), String> {
    for member in members {
        let field = U::FIELDS.iter().find(|f| f.name == *member);
        let writable = field.is_some_and(|f| !f.read_only)
            && !["id", "created_at", "updated_at"].contains(member);
        if !writable {
            return Err(format!(
                "sign_up of {}: `{member}` is not a member of the model that clients may send",
                U::NAME
            ));
        }
        if rules.admin_fields().contains(member) || rules.server_fields().contains(member) {
            return Err(format!(
                "sign_up of {}: `{member}` is set only by administrators or the server",
                U::NAME
            ));
        }
    }
    Ok(())
}

/// The counter of sign-ups per client address (see [`crate::auth::throttle::count_request`]).
const COUNTER: &str = "sign-up";

/// The `detail` of the 429 of a throttled sign-up.
const THROTTLED: &str = "Too many sign-ups from this address. Try again later.";

/// The `detail` of the uniform answer.
const RECEIVED: &str = "The sign-up has been received.";

/// The uniform answer to a sign-up (202), whether or not an account was created.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct SignUpReceived {
    /// Always "The sign-up has been received."
    pub(crate) detail: String,
}

/// The wrapper of a sign-up's `POST`: a caller who is not an administrator is counted against
/// its client address first (429 past `SIGN_UP_MAX_PER_ADDRESS` in `SIGN_UP_WINDOW`); with
/// `uniform`, such a caller's account creation and a refusal because the address is taken
/// are both answered [`received`].
pub(crate) fn around(uniform: bool) -> AroundPost {
    Arc::new(move |req: &HttpRequest, create: PostAnswer<'_>| {
        Box::pin(async move {
            // Administrators create accounts unthrottled and are answered in full. A token
            // that does not authenticate is no administrator's: the operation judges it.
            if let Ok(Some(user)) = current_user(req).await {
                if user.is_admin() {
                    return create.await;
                }
            }
            let auth = &ApiState::of(req)?.config.auth;
            crate::auth::throttle::count_request(
                req,
                COUNTER,
                auth.sign_up_max_per_address,
                auth.sign_up_window,
                THROTTLED,
            )
            .await?;
            let answer = create.await;
            if !uniform {
                return answer;
            }
            match answer {
                Ok(created) if created.status() == StatusCode::CREATED => Ok(received()),
                Err(e) if address_taken(&e) => Ok(received()),
                other => other,
            }
        })
    })
}

/// The uniform answer: 202 with [`SignUpReceived`], nothing else (no `Location`, no `ETag`).
fn received() -> HttpResponse {
    HttpResponse::Accepted().json(SignUpReceived {
        detail: RECEIVED.to_owned(),
    })
}

/// Whether `e` may be the refusal of an address already taken: a 409, as the unique index of
/// the address (soft-deleted accounts' rows included) refuses the insert. Every 409 of a
/// sign-up is answered alike (another unique member of the application's model, a retry of an
/// `Idempotency-Key` still in progress), so that none tells the address apart.
fn address_taken(e: &Error) -> bool {
    e.problem().status == StatusCode::CONFLICT.as_u16()
}

/// A mounted user blueprint: the blueprint itself, whose description gains, with sign-up,
/// what sign-up adds to its `POST` (the 429 of the throttle, the 202 of the uniform answer),
/// and which shows the surfaces where its routes are ([`Accounts`]).
pub(crate) struct UserMount {
    pub(crate) inner: Box<dyn Mount>,
    /// The `POST`'s path in the description.
    pub(crate) path: String,
    /// Anyone may create an account (sign-up).
    pub(crate) open: bool,
    pub(crate) uniform: bool,
    pub(crate) face: Accounts,
}

/// The user blueprints mounted on `api`, as they show themselves to the surfaces.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) fn accounts(api: &crate::Api) -> Vec<Accounts> {
    api.mounts()
        .iter()
        .flat_map(|m| {
            m.faces()
                .into_iter()
                .filter_map(|f| f.downcast_ref::<Accounts>().cloned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What a mounted user blueprint shows the surfaces (through [`Mount::faces`]): where its
/// routes are, so that a surface adds its own beside them (the mail flows' `verify/`).
#[derive(Debug, Clone)]
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) struct Accounts {
    /// The blueprint's prefix (`/api/users/`).
    pub(crate) prefix: String,
    /// The OpenAPI tag of its extra routes.
    pub(crate) tag: String,
    /// The model's name, in operation ids (`verifyUser`).
    pub(crate) name: &'static str,
}

impl Mount for UserMount {
    fn register(&self, cfg: &mut web::ServiceConfig) {
        self.inner.register(cfg);
    }

    fn document(&self, doc: &mut ApiDoc) {
        self.inner.document(doc);
        if !self.open {
            return;
        }
        let (status, throttled) = problem_response(doc, StatusCode::TOO_MANY_REQUESTS);
        let received = self.uniform.then(|| {
            let schema = doc.schema::<SignUpReceived>();
            json_response("Accepted: the sign-up was received; whether an account was created (the address was free) is not told", schema)
        });
        let Some(op) = doc.operation_mut(&self.path, OperationType::Post) else {
            return;
        };
        op.responses.responses.insert(status, throttled);
        let mut text = String::from(
            "Sign-ups by callers who are not administrators are counted per client address: \
             past SIGN_UP_MAX_PER_ADDRESS in SIGN_UP_WINDOW seconds the answer is 429.",
        );
        if let Some(received) = received {
            op.responses.responses.insert("202".to_owned(), received);
            text.push_str(
                " Such callers get 202 with the same body whether the account was created or \
                 the address was already taken (nothing is created then); administrators get \
                 201 with the new user, or 409.",
            );
        }
        op.description = Some(match op.description.take() {
            Some(d) => format!("{d}\n\n{text}"),
            None => text,
        });
    }

    fn indexes(&self) -> Vec<crate::db::indexes::IndexSpec> {
        self.inner.indexes()
    }

    fn table(&self) -> Option<crate::db::schema_check::TableSpec> {
        self.inner.table()
    }

    fn model(&self) -> Option<&'static crate::db::ddl::ModelTable> {
        self.inner.model()
    }

    fn reader(&self) -> Option<(&'static str, Arc<dyn std::any::Any + Send + Sync>)> {
        self.inner.reader()
    }

    fn resource(&self) -> Option<(&'static str, bool)> {
        self.inner.resource()
    }

    fn purge_deleted<'a>(
        &'a self,
        db: &'a crate::db::Database,
        before: chrono::DateTime<chrono::Utc>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<u64, Error>> {
        self.inner.purge_deleted(db, before)
    }

    fn faces(&self) -> Vec<&(dyn std::any::Any + Send + Sync)> {
        let mut faces = self.inner.faces();
        faces.push(&self.face);
        faces
    }
}
