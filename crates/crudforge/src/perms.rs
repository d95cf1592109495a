//! Permission rules: who may read, write and create a resource's rows, expressed as SQL scopes
//! so lists only ever contain readable rows.

use crate::auth::CurrentUser;
use crate::condition::{Arg, Cond, Condition};
use crate::error::Error;
use serde_json::{Map, Value};

/// What a caller may reach.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Every row.
    All,
    /// Only rows matching this condition (comparisons combine with AND, OR and NOT).
    Rows(Condition),
    /// Nothing; the caller must authenticate (401).
    Unauthenticated,
    /// Nothing; the caller is known but not allowed (403).
    Forbidden,
}

impl Access {
    /// The default rule: authenticated callers may, anonymous ones get 401.
    pub fn authenticated(user: Option<&CurrentUser>) -> Access {
        if user.is_some() {
            Access::All
        } else {
            Access::Unauthenticated
        }
    }

    /// Rows whose `field` holds the caller's id (anonymous: 401).
    pub fn owned_by(user: Option<&CurrentUser>, field: &'static str) -> Access {
        match user {
            Some(u) => Access::Rows(Cond::eq(field, Arg::Uuid(u.id)).into()),
            None => Access::Unauthenticated,
        }
    }

    /// Global administrators only (anonymous: 401, others: 403): an unscoped ADMIN or a
    /// SUPERADMIN; an ADMIN scoped to a domain is not one.
    pub fn admins(user: Option<&CurrentUser>) -> Access {
        match user {
            Some(u) if u.is_admin() => Access::All,
            Some(_) => Access::Forbidden,
            None => Access::Unauthenticated,
        }
    }

    /// Anyone, signed in or not.
    pub fn anyone(_user: Option<&CurrentUser>) -> Access {
        Access::All
    }

    /// The condition to add to a query, or the error to return.
    ///
    /// # Errors
    ///
    /// 401 or 403.
    pub(crate) fn into_conds(self) -> Result<Condition, Error> {
        match self {
            Access::All => Ok(Condition::always()),
            Access::Rows(c) => Ok(c),
            Access::Unauthenticated => Err(Error::Unauthorized("Authentication required.".into())),
            Access::Forbidden => Err(Error::Forbidden("You are not allowed to do this.".into())),
        }
    }
}

/// A resource's permission rules, evaluated with the current user (`None` when anonymous).
///
/// Administrators pass every rule before these are consulted. By default authenticated users
/// may read, write and create, and anonymous callers get 401.
pub trait Rules<R>: Send + Sync + 'static {
    /// Rows the caller may read (INDEX and GET), as a SQL scope.
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    /// Rows the caller may change (PATCH; and DELETE unless [`Rules::delete`] says
    /// otherwise).
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    /// Rows the caller may delete (DELETE); by default those [`Rules::write`] gives.
    fn delete(&self, user: Option<&CurrentUser>) -> Access {
        self.write(user)
    }

    /// What a created row must satisfy, judged on the row as it is stored (defaults and
    /// server-set members filled in), in the create's transaction: a row outside this scope
    /// is not created (401 for an anonymous caller, 403 for others). By default nothing
    /// beyond [`Rules::create`].
    fn created(&self, user: Option<&CurrentUser>) -> Access {
        let _ = user;
        Access::All
    }

    /// What a changed row must satisfy, judged on the row as written (`PATCH`, batch `PATCH`,
    /// restore) in the write's transaction: a change that leaves the row outside this scope is
    /// refused (401 for an anonymous caller, 403 for others) and nothing is written. By default
    /// [`Rules::write`]: a caller may not change a row into one they could no longer change,
    /// such as handing it to another owner. (A change may not take a row out of
    /// [`Rules::created`] either; see [permissions.md](https://github.com/crudforge/crudforge/blob/main/docs/permissions.md).)
    fn updated(&self, user: Option<&CurrentUser>) -> Access {
        self.write(user)
    }

    /// What is wrong with the rules for this resource (a misspelt member in an expression),
    /// one message per problem; any problem fails the mount.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the caller may create, checked before anything is written. `body` is the
    /// request's JSON object; a rule may set server-owned members (see
    /// [`Rules::server_fields`]).
    ///
    /// # Errors
    ///
    /// 401, 403, or a validation error.
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let _ = body;
        Access::authenticated(user).into_conds().map(|_| ())
    }

    /// Members the server sets (such as an owner); a client sending them gets 422.
    fn server_fields(&self) -> &[&'static str] {
        &[]
    }

    /// Members only administrators may send in POST or PATCH bodies (others get 403).
    fn admin_fields(&self) -> &[&'static str] {
        &[]
    }

    /// Members only administrators may send in PATCH bodies (others get 403), such as a
    /// password that its owner changes through an endpoint that asks for the current one.
    fn admin_update_fields(&self) -> &[&'static str] {
        &[]
    }

    /// What a blueprint whose resource has these rules by default gets when it is mounted:
    /// a function given the blueprint (as `&mut dyn Any`). The user system's role rows use it
    /// to be guarded unless the application says otherwise. None by default.
    #[doc(hidden)]
    fn on_mount(&self) -> Option<fn(&mut dyn std::any::Any)> {
        None
    }

    /// The roles the rules name (`@role = 'X'`, `@domains('X')`), so that the description
    /// can say what holding one allows. None by default (rules written as code are asked
    /// about callers without roles only).
    #[doc(hidden)]
    fn roles_named(&self) -> Vec<String> {
        Vec::new()
    }

    /// The rules as expressions, when they are ([`Expr`]): its member rules judge which
    /// members a write may send. None by default.
    #[doc(hidden)]
    fn as_expr(&self) -> Option<&Expr> {
        None
    }
}

/// Rules written as expressions in the `filter` grammar, one per kind of operation, with the
/// caller as a value:
///
/// ```
/// use crudforge::perms::Expr;
///
/// let rules = Expr::new()
///     .read("published = true or organizer_id = @me")
///     .update("organizer_id = @me")
///     .delete("organizer_id = @me and not published = true");
/// # let _ = rules;
/// ```
///
/// A comparison names a member of the resource, or of a related one through declared
/// relations (`event.organizer_id = @me`, `critter.habitat.keeper_id = @me`); crossing a
/// relation also applies the related resource's own read rule. The caller's values are `@me`
/// (their id), `@domains` (the domains they hold a role in: `domain_id in @domains`),
/// `@role = 'EDITOR'` (or `@role in (...)`), `@admin` and `@signed_in`; `true` and `false`
/// stand alone, `now` and `today` are the server's clock. Without a caller, a comparison with
/// `@me` or `@domains` is false; a rule that is false for every row refuses the caller (401
/// anonymous, 403 signed in). A kind left out lets signed-in callers in, as
/// [`DefaultRules`]. Administrators pass every rule.
///
/// The `read` rule is the scope of lists, counts, `GET`, relations and expansions; `update`
/// is judged on the stored row and again on the row as written, in the write's transaction;
/// `delete` on the stored row; `create` on the row as it is stored, in the create's
/// transaction, and a change may not take a row the `create` rule allows out of it.
///
/// Member rules narrow what a write may send, one rule per member or group of members:
///
/// ```
/// use crudforge::perms::Expr;
///
/// let rules = Expr::new()
///     .read("buyer_id = @me or listing.seller_id = @me")
///     .update("buyer_id = @me or listing.seller_id = @me")
///     .update_members(["state"], "listing.seller_id = @me")
///     .update_members(["message", "amount_cents"], "buyer_id = @me and state = 'pending'")
///     .create_members(["state"], "@new.state = 'pending'");
/// # let _ = rules;
/// ```
///
/// An update member rule is judged on the stored row, in the update's own statement, when the
/// write sends one of its members with a value other than the stored one; `@new.member` is the
/// value the write sends (the stored one when the write leaves that member out), compared with
/// a value (`@new.state in ('accepted', 'declined')`) or with the stored value of the same
/// member (`amount_cents >= @new.amount_cents`: it may only go down). A create member rule is
/// judged on the row as created when the write sends one of its members. A refused member is
/// named in a 403 (401 anonymous), and nothing is written; batch writes and imports obey the
/// same rules. The expressions are checked against the
/// resource when its blueprint is mounted (a misspelt member fails the mount); the derive's
/// `#[resource(rules(read = "...", ...))]` checks what it can at compile time.
#[derive(Debug, Clone, Default)]
pub struct Expr {
    pub(crate) read: Option<String>,
    pub(crate) update: Option<String>,
    pub(crate) delete: Option<String>,
    pub(crate) create: Option<String>,
    /// The member rules, in the order they were given.
    pub(crate) members: Vec<MemberRule>,
    /// The expressions compiled for one resource type, kept after the first use.
    pub(crate) compiled: CompiledSlot,
}

/// The compiled form of an [`Expr`] for the resource type it was first used with.
pub(crate) type CompiledSlot = std::sync::OnceLock<(
    std::any::TypeId,
    std::sync::Arc<dyn std::any::Any + Send + Sync>,
)>;

impl Expr {
    /// No expressions yet: every kind lets signed-in callers in.
    pub fn new() -> Expr {
        Expr::default()
    }

    /// The rows a caller may read (lists, counts, `GET`, relations, expansions).
    #[must_use]
    pub fn read(mut self, expr: impl Into<String>) -> Expr {
        self.read = Some(expr.into());
        self.compiled = CompiledSlot::new();
        self
    }

    /// The rows a caller may change (`PATCH`).
    #[must_use]
    pub fn update(mut self, expr: impl Into<String>) -> Expr {
        self.update = Some(expr.into());
        self.compiled = CompiledSlot::new();
        self
    }

    /// The rows a caller may delete (`DELETE`).
    #[must_use]
    pub fn delete(mut self, expr: impl Into<String>) -> Expr {
        self.delete = Some(expr.into());
        self.compiled = CompiledSlot::new();
        self
    }

    /// The same expression for `update` and `delete`.
    #[must_use]
    pub fn write(self, expr: impl Into<String>) -> Expr {
        let expr = expr.into();
        self.update(expr.clone()).delete(expr)
    }

    /// What a created row must satisfy, judged on the row as stored.
    #[must_use]
    pub fn create(mut self, expr: impl Into<String>) -> Expr {
        self.create = Some(expr.into());
        self.compiled = CompiledSlot::new();
        self
    }

    /// Who may change `members` (`PATCH`, batch `PATCH`): an update that sends one of them
    /// with a new value must satisfy `expr` on the stored row; `@new.member` is the value
    /// sent.
    #[must_use]
    pub fn update_members<I, S>(self, members: I, expr: impl Into<String>) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.member_rule(false, members, expr.into())
    }

    /// Who may set `members` when creating (`POST`, batch `POST`, import): a create that sends
    /// one of them must satisfy `expr` on the row as created.
    #[must_use]
    pub fn create_members<I, S>(self, members: I, expr: impl Into<String>) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.member_rule(true, members, expr.into())
    }

    fn member_rule<I, S>(mut self, create: bool, members: I, expr: String) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.members.push(MemberRule {
            create,
            members: members.into_iter().map(Into::into).collect(),
            expr,
        });
        self.compiled = CompiledSlot::new();
        self
    }
}

/// One member rule of an [`Expr`], as written.
#[derive(Debug, Clone)]
pub(crate) struct MemberRule {
    /// A create rule (`create_members`) or an update rule (`update_members`).
    pub(crate) create: bool,
    /// The members it governs.
    pub(crate) members: Vec<String>,
    /// The expression.
    pub(crate) expr: String,
}

impl MemberRule {
    /// How messages and the description name the rule: `update(state, message)`.
    pub(crate) fn kind(&self) -> String {
        let op = if self.create { "create" } else { "update" };
        format!("{op}({})", self.members.join(", "))
    }
}

/// The default rules: any authenticated user may read, write and create.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRules;

impl<R> Rules<R> for DefaultRules {}

/// Anyone, signed in or not, may read, write and create. For open data and tests; prefer
/// [`PublicRead`] when writes should need an account.
#[derive(Debug, Clone, Copy, Default)]
pub struct Open;

impl<R> Rules<R> for Open {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn create(
        &self,
        _user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// Anyone may read; authenticated users may write and create.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicRead;

impl<R> Rules<R> for PublicRead {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
}

/// Anyone may read; only (global) administrators create, change and delete. For shared
/// reference data such as domains (tenants).
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicReadAdminWrite;

impl<R> Rules<R> for PublicReadAdminWrite {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
}

/// "The owner may read and write, admins all": rows whose `field` is the caller's id. On
/// create the server sets `field` to the caller's id; clients cannot choose it.
#[derive(Debug, Clone, Copy)]
pub struct OwnerRules {
    field: &'static str,
}

impl OwnerRules {
    /// Owner rules on the field `user_id`.
    pub const USER_ID: OwnerRules = OwnerRules { field: "user_id" };

    /// Owner rules on another field (`owner_id`).
    pub const fn new(field: &'static str) -> Self {
        OwnerRules { field }
    }

    fn name(&self) -> &'static str {
        self.field
    }
}

impl<R> Rules<R> for OwnerRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, self.name())
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, self.name())
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        body.insert(self.name().to_owned(), Value::String(u.id.to_string()));
        Ok(())
    }

    fn server_fields(&self) -> &[&'static str] {
        std::slice::from_ref(&self.field)
    }
}

/// Administrators only, for every operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdminOnly;

impl<R> Rules<R> for AdminOnly {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
}

/// A way to a resource's rows besides its five operations, which a blueprint may give an
/// access of its own with [`CrudBlueprint::door`](crate::CrudBlueprint::door). Each follows
/// the rules of one operation until then, and keeps following them after: a door's access
/// narrows who passes, it never widens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Door {
    /// `GET <prefix>export/` (the `export` feature): the list's rules.
    Export,
    /// `POST <prefix>import/` (the `export` feature): the create's rules.
    Import,
    /// `GET <prefix>aggregate/`: the list's rules.
    Aggregate,
    /// `GET <prefix>events/` and its tickets (the `realtime` feature): the list's rules.
    Feed,
    /// `GET <item>/files/<file id>` and `POST .../link` (the `files` feature): the item's
    /// `GET` rules.
    Download,
    /// `GET <item>/history/` (the `history` feature): the item's `GET` rules.
    History,
}

impl Door {
    /// The door's name, as mount errors and the description say it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Door::Export => "export",
            Door::Import => "import",
            Door::Aggregate => "aggregate",
            Door::Feed => "feed",
            Door::Download => "download",
            Door::History => "history",
        }
    }
}

/// Who may pass a [`Door`], on top of the rules of the operation it follows. Administrators
/// pass every door.
///
/// ```
/// use crudforge::perms::{Door, DoorAccess};
/// # use crudforge::CrudBlueprint;
/// # fn mount<R: crudforge::Resource>(b: CrudBlueprint<R>) -> CrudBlueprint<R> {
/// b.door(Door::Import, DoorAccess::Admins)
///     .door(Door::Export, DoorAccess::SignedIn)
///     .door(Door::Aggregate, DoorAccess::expr("@role = 'ANALYST'"))
///     .door(Door::Feed, DoorAccess::expr("seller_id = @me"))
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DoorAccess {
    /// Whoever the operation the door follows lets in (the default).
    #[default]
    AsOperation,
    /// Signed-in callers only (anonymous: 401), even when the operation is public.
    SignedIn,
    /// Global administrators only (anonymous: 401, others: 403).
    Admins,
    /// An expression in the language of [`Expr`], judged with the caller: where it is false
    /// for every row the caller is refused (401 anonymous, 403 signed in); where it compares
    /// members, the door reaches only the rows it matches (an export, aggregates, the feed and
    /// downloads read only those, and an import creates only those, nothing otherwise).
    Expr(String),
}

impl DoorAccess {
    /// [`DoorAccess::Expr`]: `src` in the language of [`Expr`] rules.
    pub fn expr(src: impl Into<String>) -> DoorAccess {
        DoorAccess::Expr(src.into())
    }
}
