//! What a generated handler reads from its request: the caller (and the rules' scope for
//! them), the conditions the path names (parent parameters and the item's key), and the body
//! decoded into the generated input type.

use super::shared::Shared;
use super::soft_delete::Rows;
use super::{Resource, Validate};
use crate::condition::{parse_arg, Arg, Cond, Condition};
use crate::crud::hooks::HookCtx;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::db::Conn;
use crate::error::Error;
use crate::json::from_value;
use actix_web::HttpRequest;
use serde::de::DeserializeOwned;

/// Conditions from the parent parameters of a nested prefix. A value that does not parse
/// names no parent: 404.
pub(crate) fn parent_conds<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Vec<Cond>, Error> {
    let mut conds = Vec::with_capacity(shared.parents.len() + 1);
    for (field, param) in &shared.parents {
        let raw = req.match_info().get(param).unwrap_or_default();
        let arg = parse_arg(field.kind, raw).map_err(|_| not_found::<R>())?;
        conds.push(Cond::eq(field.name, arg));
    }
    Ok(conds)
}

/// The conditions that address one item: its parents and its key.
pub(crate) fn item_conds<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Vec<Cond>, Error> {
    let mut conds = parent_conds(shared, req)?;
    conds.push(key_cond(shared, req)?);
    Ok(conds)
}

/// The condition of the item's key in the path. A key that does not parse names no item: 404.
pub(crate) fn key_cond<R: Resource>(shared: &Shared<R>, req: &HttpRequest) -> Result<Cond, Error> {
    let raw = req
        .match_info()
        .get(&shared.res_id_param)
        .unwrap_or_default();
    let arg = parse_arg(shared.res_id.kind, raw).map_err(|_| not_found::<R>())?;
    Ok(Cond::eq(shared.res_id.name, arg))
}

/// The caller of an operation: `None` for public operations (which skip authentication and
/// rules) and for anonymous callers. Enforces `admin_only`.
pub(crate) async fn caller<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
) -> Result<Caller, Error> {
    caller_with(shared, req, op, None).await
}

/// [`caller`], with the user loaded on the request's own connection `conn` (in its read
/// snapshot).
pub(crate) async fn caller_on<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    conn: &mut Conn,
) -> Result<Caller, Error> {
    caller_with(shared, req, op, Some(conn)).await
}

async fn caller_with<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    conn: Option<&mut Conn>,
) -> Result<Caller, Error> {
    if shared.ops.get(&op).is_some_and(|o| o.public) {
        return Ok(Caller::Public);
    }
    let user = match conn {
        Some(conn) => crate::auth::current_user_on(req, conn).await?,
        None => crate::auth::current_user(req).await?,
    };
    caller_for(shared, op, user.as_ref())
}

/// The caller of an operation, the request's user known (`None`: anonymous). Enforces
/// `admin_only`.
pub(crate) fn caller_for<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    user: Option<&crate::auth::CurrentUser>,
) -> Result<Caller, Error> {
    let opts = shared.ops.get(&op);
    if opts.is_some_and(|o| o.public) {
        return Ok(Caller::Public);
    }
    if opts.is_some_and(|o| o.admin_only) {
        match user {
            None => return Err(Error::Unauthorized("Authentication required.".into())),
            Some(u) if !u.is_admin() => {
                return Err(Error::Forbidden("Administrators only.".into()))
            }
            Some(_) => {}
        }
    }
    Ok(match user {
        Some(u) if u.is_admin() => Caller::Admin(u.clone()),
        other => Caller::User(other.cloned()),
    })
}

/// Who is calling, as far as rules are concerned.
pub(crate) enum Caller {
    /// A public operation: no authentication, no rules.
    Public,
    /// An administrator: every rule passes.
    Admin(crate::auth::CurrentUser),
    /// Anyone else (maybe anonymous): the rules decide.
    User(Option<crate::auth::CurrentUser>),
}

impl Caller {
    // The scopes below are the rules' own; `relations::rules` links the relations a rule
    // crosses, and every generated read and write takes its scope from there.

    /// The rules' read scope among `rows` (deleted rows are asked for explicitly).
    pub(crate) fn read_scope_in<R: Resource>(
        &self,
        shared: &Shared<R>,
        rows: Rows,
    ) -> Result<Condition, Error> {
        self.scope_in::<R>(rows, |u| shared.rules.read(u))
    }

    /// The rules' write scope among `rows` (a restore writes deleted rows).
    pub(crate) fn write_scope_in<R: Resource>(
        &self,
        shared: &Shared<R>,
        rows: Rows,
    ) -> Result<Condition, Error> {
        self.scope_in::<R>(rows, |u| shared.rules.write(u))
    }

    /// The rules' delete scope among `rows`.
    pub(crate) fn delete_scope_in<R: Resource>(
        &self,
        shared: &Shared<R>,
        rows: Rows,
    ) -> Result<Condition, Error> {
        self.scope_in::<R>(rows, |u| shared.rules.delete(u))
    }

    /// The scope `access` gives the caller (everything for public operations and
    /// administrators), narrowed to `rows`.
    fn scope_in<R: Resource>(
        &self,
        rows: Rows,
        access: impl FnOnce(Option<&crate::auth::CurrentUser>) -> crate::perms::Access,
    ) -> Result<Condition, Error> {
        let scope = match self {
            Caller::Public | Caller::Admin(_) => Condition::always(),
            Caller::User(u) => access(u.as_ref()).into_conds()?,
        };
        Ok(rows.narrow::<R>(scope))
    }

    /// The rows a read (GET, INDEX) asks for: live ones, or with `include_deleted=true`
    /// deleted ones too, which only administrators may ask for (401 anonymous, 403 others).
    ///
    /// # Errors
    ///
    /// A malformed `include_deleted` (400), or the refusal.
    pub(crate) fn rows_read<R: Resource>(&self, params: &Params) -> Result<Rows, Error> {
        if !super::soft_delete::include_deleted::<R>(params)? {
            return Ok(Rows::Live);
        }
        let why = "Only administrators may see deleted items (`include_deleted`).";
        match self {
            Caller::Admin(_) => Ok(Rows::All),
            Caller::User(None) => Err(Error::Unauthorized(why.into())),
            Caller::Public | Caller::User(Some(_)) => Err(Error::Forbidden(why.into())),
        }
    }

    pub(crate) fn is_admin(&self) -> bool {
        matches!(self, Caller::Admin(_))
    }

    /// The account answers are rendered for (`None`: anonymous, or a public operation, which
    /// identifies nobody): what read rules judge (see `crud::read_rules`).
    pub(crate) fn viewer(&self) -> Option<&crate::auth::CurrentUser> {
        match self {
            Caller::Public => None,
            Caller::Admin(u) => Some(u),
            Caller::User(u) => u.as_ref(),
        }
    }
}

/// Checks members only the server or administrators may send: the model's server-set
/// members (`set = ...`) and, on update, its create-only ones are refused from every caller
/// (422 naming the member); the rules' server members from all but administrators (422), their
/// administrators' members from the others (401 or 403).
pub(crate) fn check_members<R: Resource>(
    shared: &Shared<R>,
    caller: &Caller,
    obj: &serde_json::Map<String, serde_json::Value>,
    op: Operation,
) -> Result<(), Error> {
    let update = matches!(op, Operation::Patch);
    for f in R::FIELDS.iter().filter(|f| obj.contains_key(f.name)) {
        // Only an upload sets a file member: metadata in JSON could name another row's file.
        if f.file.is_some() && !obj.get(f.name).is_some_and(serde_json::Value::is_null) {
            return Err(Error::invalid_field(
                f.name,
                "is a file: upload it as a `multipart/form-data` part of this name, or send null to remove it",
            ));
        }
        if f.server_set {
            return Err(Error::invalid_field(
                f.name,
                "is set by the server and cannot be sent",
            ));
        }
        if update && f.create_only {
            return Err(Error::invalid_field(
                f.name,
                "is set when the item is created and cannot be changed",
            ));
        }
    }
    if caller.is_admin() {
        return Ok(());
    }
    for f in shared.rules.server_fields() {
        if obj.contains_key(*f) {
            return Err(Error::invalid_field(
                *f,
                "is set by the server and cannot be sent",
            ));
        }
    }
    let on_update = match op {
        Operation::Patch => shared.rules.admin_update_fields(),
        _ => &[],
    };
    for f in shared.rules.admin_fields().iter().chain(on_update) {
        if obj.contains_key(*f) {
            let why = format!("Only administrators may set `{f}`.");
            // Without credentials the answer is "authenticate" (401), as for every other
            // operation that needs a user; with a non-admin user it is 403.
            return Err(match caller {
                Caller::User(None) => Error::Unauthorized(why.into()),
                _ => Error::Forbidden(why.into()),
            });
        }
    }
    Ok(())
}

/// Replaces plaintext `#[resource(password)]` members with bcrypt hashes, after checking them
/// against the password policy (`PASSWORD_MIN_LENGTH`).
pub(crate) async fn hash_passwords<T: Validate>(
    input: &mut T,
    policy: crate::auth::PasswordPolicy,
) -> Result<(), Error> {
    for (field, value) in input.passwords_mut() {
        let plain = std::mem::take(value);
        *value = crate::auth::hash_password_for(field, plain, policy).await?;
    }
    Ok(())
}

/// The 404 of an item that does not exist (or that the caller may not see).
pub(crate) fn not_found<R: Resource>() -> Error {
    Error::NotFound(format!("No {} exists at this path.", R::NAME).into())
}

/// Reads a JSON object body.
pub(crate) fn json_object(
    req: &HttpRequest,
    body: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    let v = crate::json::parse(req, body)?;
    match v {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(Error::Validation {
            detail: "The request body must be a JSON object.".into(),
            field: None,
        }),
    }
}

/// Decodes a body into `T`, through a substituted input schema when the operation has one.
pub(crate) fn decode<R: Resource, T: DeserializeOwned + Validate>(
    shared: &Shared<R>,
    op: Operation,
    obj: serde_json::Map<String, serde_json::Value>,
    parents: &[Cond],
) -> Result<T, Error> {
    // Parent members come from the path; a body may not set them.
    for (field, _) in &shared.parents {
        if obj.contains_key(field.name) {
            return Err(Error::invalid_field(
                field.name,
                "is taken from the URL and cannot be set in the body",
            ));
        }
    }
    let mut v = serde_json::Value::Object(obj);
    // A substituted input schema checks the body first; the same members then feed `T`.
    if let Some((_, check)) = shared.ops.get(&op).and_then(|o| o.input) {
        check(&v)?;
    }
    if let serde_json::Value::Object(m) = &mut v {
        for c in parents {
            m.insert(c.field.to_owned(), arg_json(&c.arg));
        }
    }
    let t: T = from_value(v)?;
    t.validate()?;
    Ok(t)
}

/// A filter value as the JSON member it stands for.
pub(crate) fn arg_json(arg: &Arg) -> serde_json::Value {
    match arg {
        Arg::Text(s) => s.clone().into(),
        Arg::Int(i) => (*i).into(),
        Arg::Float(f) => (*f).into(),
        Arg::Bool(b) => (*b).into(),
        Arg::Uuid(u) => u.to_string().into(),
        Arg::DateTime(t) => t.to_rfc3339().into(),
        Arg::Date(d) => d.to_string().into(),
        Arg::List(items) => items.iter().map(arg_json).collect::<Vec<_>>().into(),
    }
}

impl Caller {
    /// What hooks are told about the caller.
    pub(crate) fn hook_ctx(
        &self,
        op: Operation,
        db: &crate::db::Database,
        req: &HttpRequest,
    ) -> HookCtx {
        let user = match self {
            Caller::Public => None,
            Caller::Admin(u) => Some(u.clone()),
            Caller::User(u) => u.clone(),
        };
        HookCtx {
            user,
            operation: op,
            db: db.clone(),
            query: req.query_string().to_owned(),
            state: req
                .app_data::<actix_web::web::Data<crate::state::ApiState>>()
                .cloned(),
            resources: req
                .app_data::<actix_web::web::Data<crate::auth::key_scope::Resources>>()
                .cloned(),
        }
    }

    /// The id idempotency keys are scoped to (`None`: anonymous).
    pub(crate) fn user_id(&self) -> Option<uuid::Uuid> {
        match self {
            Caller::Public | Caller::User(None) => None,
            Caller::Admin(u) | Caller::User(Some(u)) => Some(u.id),
        }
    }
}
