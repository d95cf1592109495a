//! The user blueprint: the CRUD operations of a user model plus `login/`, `refresh/` and `me/`
//! (the caller with the roles it holds); the session routes themselves are in `session`.

use super::model::{User, UserModel};
use super::session::{
    login, logout_route, password_route, refresh_route, LoginHook, LoginRequest, LoginResponse,
};
use super::sign_up::{check_members as check_sign_up_members, Accounts, SignUpRules, UserMount};
use crate::auth::{require_user, CurrentUser};
use crate::crud::conditional::{if_none_match, tag_of};
use crate::crud::options::{output_schema, present_with, PresentFn, SchemaFn};
use crate::crud::query::sparse::members_of;
use crate::crud::{Arg, Cond, CrudBlueprint, CustomRoute, Operation, Present};
use crate::db::Conn;
use crate::error::Error;
use crate::mount::{IntoMount, Mount};
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use futures_util::future::LocalBoxFuture;
use serde::Serialize;
use std::sync::Arc;
use uuid::Uuid;

/// The user endpoints: the five CRUD operations on a user model plus `login/`, `refresh/`
/// and `me/`. Defaults: name the model's (`User`), prefix `/api/users/`, [`UserRules`](crate::users::UserRules).
pub struct UserBlueprint<U: UserModel> {
    crud: CrudBlueprint<U>,
    hook: Option<Arc<dyn LoginHook>>,
    /// Statuses the login hook may answer with, documented on `login/`.
    hook_errors: Vec<u16>,
    /// How `me/` renders the user, when not as `U::Response`.
    me: Option<(SchemaFn, PresentFn<U>)>,
    name: String,
    /// With sign-up: the members a self-registering caller may send besides e-mail and
    /// password.
    sign_up: Option<Vec<&'static str>>,
    /// Sign-ups are answered uniformly (see [`UserBlueprint::uniform_sign_up`]).
    uniform: bool,
}

impl<U: UserModel> std::fmt::Debug for UserBlueprint<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserBlueprint")
            .field("name", &self.name)
            .field("crud", &self.crud)
            .finish_non_exhaustive()
    }
}

impl Default for UserBlueprint<User> {
    fn default() -> Self {
        UserBlueprint::new("/api/users/")
    }
}

impl<U: UserModel> UserBlueprint<U> {
    /// The user endpoints of `U` at `prefix`.
    pub fn new(prefix: &str) -> Self {
        // E-mail addresses are stored normalized (see `identity`), and nobody changes a user
        // who outranks them (see `privilege`).
        let crud = super::identity::normalize_on_write(CrudBlueprint::<U>::new(prefix));
        let mut crud = super::guards::guard_users(crud);
        if U::PUBLIC_REGISTRATION {
            crud = crud.public([Operation::Post]);
        }
        UserBlueprint {
            crud,
            hook: None,
            hook_errors: Vec::new(),
            me: None,
            name: U::NAME.to_owned(),
            sign_up: None,
            uniform: false,
        }
    }

    /// Opens `POST <prefix>` to everyone: sign-up (public registration) with the library's
    /// user model or any other. A caller who is not an administrator may send `email`,
    /// `password` and the `members` listed here, nothing else: any other member is refused
    /// with 422 naming it (members only administrators may set, such as `is_enabled`, are
    /// refused as on every operation: 401 without a token, 403 with one). The account is
    /// created with no role, enabled as the model's default says. Administrators still create
    /// users with every member. The model's rules keep deciding every other operation.
    ///
    /// Sign-ups by callers who are not administrators are counted per client address: past
    /// `SIGN_UP_MAX_PER_ADDRESS` in `SIGN_UP_WINDOW` seconds the answer is 429 with
    /// `Retry-After` (as for a public `POST` of [`UserModel::PUBLIC_REGISTRATION`]). An address
    /// already taken, by an account soft-deleted or not, is 409 (`conflict_error`), unless
    /// the answer is [uniform](UserBlueprint::uniform_sign_up).
    ///
    /// Mounting fails when a listed member is not one clients may send on create, or is one
    /// only administrators or the server set, and when the batch form of `POST` is mounted
    /// too (one request would create many accounts). It replaces the public `POST` of
    /// [`UserModel::PUBLIC_REGISTRATION`].
    #[must_use]
    pub fn sign_up(mut self, members: &[&'static str]) -> Self {
        self.sign_up = Some(members.to_vec());
        self
    }

    /// Answers every sign-up by a caller who is not an administrator with the same 202 and
    /// body (`{"detail": "The sign-up has been received."}`, no `Location`, no `ETag`, no id)
    /// whether the account was created or its address was already taken (nothing is created
    /// then), instead of 201 with the new user or 409 (every 409 of a sign-up is answered so):
    /// the answer does not tell who has an account. Refusals that do not depend on the address (422 for a member or a password,
    /// 429) stay as they are, and administrators keep 201 and 409.
    ///
    /// The answer alone hides nothing if the caller can tell otherwise: a new account that can
    /// log in at once tells by logging in (create accounts disabled and enable them once the
    /// address is confirmed, for example from an `after_commit` hook that mails a link), and
    /// whatever an application does for new accounts only (a welcome e-mail) tells the
    /// address's owner. See [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md) ("Sign-up"). Mounting fails without
    /// [`sign_up`](UserBlueprint::sign_up) or `PUBLIC_REGISTRATION`.
    #[must_use]
    pub fn uniform_sign_up(mut self) -> Self {
        self.uniform = true;
        self
    }

    /// The blueprint's name (default: the model's name, as its CRUD operations are tagged);
    /// used as the OpenAPI tag of its extra routes.
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Adjusts the CRUD part with the same options as any blueprint.
    #[must_use]
    pub fn crud(mut self, f: impl FnOnce(CrudBlueprint<U>) -> CrudBlueprint<U>) -> Self {
        self.crud = f(self.crud);
        self
    }

    /// Sets the login-validation hook.
    #[must_use]
    pub fn login_hook(mut self, hook: impl LoginHook) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Error statuses the login hook answers with besides 401 (for example 404 for an unknown
    /// domain), so that the description of `login/` declares them.
    #[must_use]
    pub fn login_errors(mut self, statuses: &[u16]) -> Self {
        self.hook_errors.extend_from_slice(statuses);
        self
    }

    /// Answers `me/` with `P::Output`, built by `P` with database access, instead of the
    /// model's response schema: the same presenter as a list's
    /// ([`OpOptions::present`](crate::crud::OpOptions::present)) shows the current user as
    /// lists show users.
    #[must_use]
    pub fn me_present<P: Present<U>>(mut self) -> Self {
        self.me = Some((output_schema::<U, P>, present_with::<U, P>));
        self
    }
}

impl<U: UserModel> IntoMount for UserBlueprint<U> {
    fn into_mount(mut self) -> Result<Box<dyn Mount>, String> {
        // Anyone may create an account: with sign-up, or a public POST of a model with
        // PUBLIC_REGISTRATION.
        let open = self.sign_up.is_some()
            || (U::PUBLIC_REGISTRATION
                && self
                    .crud
                    .ops
                    .get(&Operation::Post)
                    .is_some_and(|o| o.public));
        if self.uniform && !open {
            return Err(format!(
                "uniform_sign_up of {}: there is no sign-up (call sign_up)",
                U::NAME
            ));
        }
        if let Some(members) = self.sign_up.take() {
            self.crud = with_sign_up(self.crud, members)?;
        }
        if open {
            if self.crud.batch.contains(&Operation::Post) {
                return Err(format!(
                    "sign_up of {}: the batch form of POST cannot be mounted with sign-up (one \
                     request would create many accounts); create accounts in bulk on another \
                     blueprint without sign-up, for administrators",
                    U::NAME
                ));
            }
            self.crud.hooks.around_post = Some(super::sign_up::around(self.uniform));
        }
        // A new account is told to the surfaces in its transaction (mail asks to verify it).
        self.crud
            .hooks
            .after_create
            .push(Arc::new(account_created::<U>));
        let path = self.crud.prefix().to_owned();
        let uniform = self.uniform;
        let tag = self.name.clone();
        let login = self.login_route();
        let me = self.me_route();
        let inner = IntoMount::into_mount(
            self.crud
                .route(login)
                .route(refresh_route::<U>(&tag))
                .route(logout_route::<U>(&tag))
                .route(password_route::<U>(&tag))
                .route(me),
        )?;
        Ok(Box::new(UserMount {
            inner,
            face: Accounts {
                prefix: path.clone(),
                tag,
                name: U::NAME,
            },
            path,
            open,
            uniform,
        }))
    }
}

/// The blueprint's last `after_create` hook: the surfaces write what goes with a new account
/// (its id and address) in its transaction.
fn account_created<'a, U: UserModel>(
    conn: &'a mut Conn,
    ctx: &'a crate::crud::HookCtx,
    row: &'a U,
) -> LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(async move {
        let Some(state) = ctx.state.as_deref() else {
            return Ok(());
        };
        let id = row.key_of(U::ID_FIELD).and_then(|k| k.parse::<Uuid>().ok());
        let (Some(id), Some(email)) = (id, row.key_of("email")) else {
            return Ok(());
        };
        for surface in crate::SURFACES {
            if let Some(work) = surface.account_created(state, conn, id, &email) {
                work.await?;
            }
        }
        Ok(())
    })
}

impl<U: UserModel> UserBlueprint<U> {
    /// `POST login/`, public, with the login hook; its documented errors include the
    /// statuses the hook may answer with.
    fn login_route(&self) -> CustomRoute {
        let hook = self.hook.clone();
        let mut errors = vec![400, 401, 422, 429];
        for status in &self.hook_errors {
            if !errors.contains(status) {
                errors.push(*status);
            }
        }
        CustomRoute::new(OperationType::Post, "login/", move || {
            let hook = hook.clone();
            web::post().to(move |req: HttpRequest, body: crate::Json<LoginRequest>| {
                let hook = hook.clone();
                async move { login(req, body.into_inner(), hook.as_deref()).await }
            })
        })
        .operation_id(&format!("login{}", U::NAME))
        .summary("Log in with e-mail and password")
        .body::<LoginRequest>()
        .responds::<LoginResponse>()
        .errors(&errors)
        .tag(&self.name)
        .public()
    }

    /// `GET me/`: the model's response with the caller's roles ([`WithRoles`]), or the
    /// blueprint's presentation when it has one.
    fn me_route(&self) -> CustomRoute {
        let present = self.me.map(|(_, p)| p);
        // A model with a member called `roles` keeps its own (see `WithRoles`).
        let own_roles = members_of::<U::Response>().iter().any(|m| m == ROLES);
        let mut me = CustomRoute::new(OperationType::Get, "me/", move || {
            web::get().to(move |req: HttpRequest| me::<U>(req, present, own_roles))
        })
        .operation_id(&format!("getCurrent{}", U::NAME))
        .summary("The current user, with the roles it holds")
        .responds::<WithRoles<U::Response>>()
        .errors(&[401])
        .etag()
        .tag(&self.name);
        if let Some((schema, _)) = self.me {
            me.doc.response = Some(schema);
        }
        me
    }
}

/// The user CRUD with sign-up: `POST` judged by [`SignUpRules`] (not public in the sense of
/// skipping rules, which would skip the sign-up members' check too).
fn with_sign_up<U: UserModel>(
    mut crud: CrudBlueprint<U>,
    members: Vec<&'static str>,
) -> Result<CrudBlueprint<U>, String> {
    match crud.ops.get(&Operation::Post) {
        None => return Err(format!("sign_up of {}: POST is not enabled", U::NAME)),
        Some(o) if o.admin_only => {
            return Err(format!("sign_up of {}: POST is admin_only", U::NAME))
        }
        Some(_) => {}
    }
    check_sign_up_members::<U>(&members, crud.rules.as_ref())?;
    crud.rules = Arc::new(SignUpRules {
        inner: Arc::clone(&crud.rules),
        members,
    });
    Ok(crud.with(Operation::Post, |o| o.public(false)))
}

/// One role the caller holds, as `me/` lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "HeldRole")]
struct HeldRole {
    /// The role name, such as `ADMIN`.
    role: String,
    /// The domain the role is limited to; `null`: every domain.
    domain_id: Option<Uuid>,
}

/// The schema of `me/` without a presenter: the model's response `R` with a required member
/// `roles`, the caller's roles (`[{"role": "ADMIN", "domain_id": null}]`), unless `R` has a
/// member of that name itself (it is then left alone, in the body as in the schema). Named
/// `Current<R>` (`CurrentUser`).
struct WithRoles<R>(std::marker::PhantomData<R>);

impl<R: schemars::JsonSchema> schemars::JsonSchema for WithRoles<R> {
    fn schema_name() -> String {
        format!("Current{}", R::schema_name())
    }

    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut schema = R::json_schema(gen);
        let roles = gen.subschema_for::<Vec<HeldRole>>();
        if let schemars::schema::Schema::Object(o) = &mut schema {
            o.metadata().description = Some(
                "The signed-in user, as the service returns users, with the roles it holds."
                    .to_owned(),
            );
            let object = o.object();
            if !object.properties.contains_key(ROLES) {
                object.properties.insert(ROLES.to_owned(), roles);
                object.required.insert(ROLES.to_owned());
            }
        }
        schema
    }
}

/// The member of `me/` that lists the caller's roles.
const ROLES: &str = "roles";

/// The body of `me/` without a presenter: the model's response, its members in their order,
/// then `roles`.
#[derive(Serialize)]
struct WithRolesBody<R> {
    #[serde(flatten)]
    user: R,
    roles: Vec<HeldRole>,
}

/// The body of `me/` for `user` (the model's response `response`): with `roles`, the caller's
/// roles ordered by name then domain (so that the body, and its tag, do not depend on the
/// order rows are read in), unless the model has a member of that name (`own_roles`).
fn with_roles(
    response: impl Serialize,
    user: &CurrentUser,
    own_roles: bool,
) -> Result<Vec<u8>, Error> {
    let internal = |e: serde_json::Error| Error::Internal(format!("serializing a response: {e}"));
    if own_roles {
        return serde_json::to_vec(&response).map_err(internal);
    }
    let mut roles: Vec<HeldRole> = user
        .roles
        .iter()
        .map(|g| HeldRole {
            role: g.role.clone(),
            domain_id: g.domain_id,
        })
        .collect();
    roles.sort_by(|a, b| (&a.role, a.domain_id).cmp(&(&b.role, b.domain_id)));
    serde_json::to_vec(&WithRolesBody {
        user: response,
        roles,
    })
    .map_err(internal)
}

async fn me<U: UserModel>(
    req: HttpRequest,
    present: Option<PresentFn<U>>,
    own_roles: bool,
) -> Result<HttpResponse, Error> {
    // A read of the user resource, for an API key limited to scopes (`read`, `User:read`).
    crate::auth::key_scope::address(
        &req,
        crate::auth::key_scope::Target {
            resource: U::NAME,
            action: crate::auth::key_scope::Action::Read,
            secret: true,
        },
    );
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let mut conn = st.db.get().await?;
    let found = U::select(
        &mut conn,
        &[Cond::eq("id", Arg::Uuid(user.id))],
        &[],
        Some(crate::crud::Window::first(1)),
    )
    .await?;
    let u = found
        .into_iter()
        .next()
        .ok_or_else(|| Error::Unauthorized("The token's user does not exist.".into()))?;
    // The presenter takes its own connection.
    drop(conn);
    let body = match present {
        None => with_roles(U::Response::from(u), &user, own_roles)?,
        Some(present) => present(&st.db, vec![u])
            .await?
            .pop()
            .ok_or_else(|| Error::Internal("the presenter returned no item".into()))?,
    };
    // The strong tag of the representation sent, as an item's GET gives it.
    let etag = tag_of(&body);
    if if_none_match(req.headers())?.is_some_and(|p| p.matches_weak(&etag)) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .body(body))
}
