//! The generated operations and the options of each: schemas, presenters, `admin_only`,
//! `public`.

use crate::crud::{Resource, Validate};
use crate::error::Error;
use crate::openapi::ApiDoc;
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// The generated operations: the five of every resource, and the restore of a soft-delete one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Operation {
    /// `GET <prefix>`: a filtered, paginated list.
    Index,
    /// `GET <prefix><id>`: one item.
    Get,
    /// `POST <prefix>`: create.
    Post,
    /// `PATCH <prefix><id>`: partial update.
    Patch,
    /// `DELETE <prefix><id>`: delete.
    Delete,
    /// `POST <prefix><id>/restore/`: restore a deleted item of a soft-delete resource (not one
    /// of the five every blueprint has; blueprints of `#[resource(soft_delete)]` resources
    /// enable it).
    Restore,
}

impl Operation {
    /// The five of every resource, in order.
    pub(crate) const ALL: [Operation; 5] = [
        Operation::Index,
        Operation::Get,
        Operation::Post,
        Operation::Patch,
        Operation::Delete,
    ];

    /// The operation id for a model name: `listCritter`, `getCritter`, ...
    pub fn operation_id(self, model: &str) -> String {
        let verb = match self {
            Operation::Index => "list",
            Operation::Get => "get",
            Operation::Post => "create",
            Operation::Patch => "update",
            Operation::Delete => "delete",
            Operation::Restore => "restore",
        };
        format!("{verb}{model}")
    }
}

/// Serializes a model through a substituted response schema.
pub(crate) type Render<R> = fn(&mut Vec<u8>, R) -> serde_json::Result<()>;
/// Adds a schema to the description.
pub(crate) type SchemaFn = fn(&mut ApiDoc) -> ReferenceOr<Schema>;
/// Turns models into response bodies with database access (see [`Present`]).
pub(crate) type PresentFn<R> =
    for<'a> fn(
        &'a crate::db::Database,
        Vec<R>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<Vec<Vec<u8>>, Error>>;

/// A response schema built with database access, for whole pages at once (for example to
/// add each user's roles with one query per page).
pub trait Present<R>: Sized + 'static {
    /// The response body of one item.
    type Output: Serialize + schemars::JsonSchema;

    /// Converts a page (or a single item) of models.
    fn present(
        db: &crate::db::Database,
        items: Vec<R>,
    ) -> impl std::future::Future<Output = Result<Vec<Self::Output>, Error>>;
}

pub(crate) fn present_with<'a, R: 'static, P: Present<R>>(
    db: &'a crate::db::Database,
    items: Vec<R>,
) -> futures_util::future::LocalBoxFuture<'a, Result<Vec<Vec<u8>>, Error>> {
    Box::pin(async move {
        let out = P::present(db, items).await?;
        out.iter()
            .map(|o| serde_json::to_vec(o).map_err(|e| Error::Internal(e.to_string())))
            .collect()
    })
}

pub(crate) fn output_schema<R: 'static, P: Present<R>>(doc: &mut ApiDoc) -> ReferenceOr<Schema> {
    doc.schema::<P::Output>()
}

/// Checks a body against a substituted input schema (the body itself then feeds the real
/// input, so it is parsed from JSON once for each type).
pub(crate) type Parse = fn(&serde_json::Value) -> Result<(), Error>;

/// Options of one operation: `schema` (response type), `arg_schema` (input type),
/// `admin_only`, `public`.
pub struct OpOptions<R> {
    pub(crate) admin_only: bool,
    pub(crate) public: bool,
    pub(crate) response: Option<(SchemaFn, Render<R>)>,
    pub(crate) presenter: Option<(SchemaFn, PresentFn<R>)>,
    pub(crate) input: Option<(SchemaFn, Parse)>,
    /// The members of a substituted response schema (`schema` or `present`): `fields` may
    /// name only those.
    pub(crate) members: Option<fn() -> Vec<String>>,
}

impl<R> Clone for OpOptions<R> {
    fn clone(&self) -> Self {
        OpOptions {
            admin_only: self.admin_only,
            public: self.public,
            response: self.response,
            presenter: self.presenter,
            input: self.input,
            members: self.members,
        }
    }
}

impl<R> Default for OpOptions<R> {
    fn default() -> Self {
        OpOptions {
            admin_only: false,
            public: false,
            response: None,
            presenter: None,
            input: None,
            members: None,
        }
    }
}

impl<R> fmt::Debug for OpOptions<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpOptions")
            .field("admin_only", &self.admin_only)
            .field("public", &self.public)
            .field("schema", &self.response.is_some())
            .field("arg_schema", &self.input.is_some())
            .finish()
    }
}

fn render_as<R, S: From<R> + Serialize>(out: &mut Vec<u8>, r: R) -> serde_json::Result<()> {
    serde_json::to_writer(out, &S::from(r))
}

pub(crate) fn schema_of<S: schemars::JsonSchema>(doc: &mut ApiDoc) -> ReferenceOr<Schema> {
    doc.schema::<S>()
}

fn parse_as<T: DeserializeOwned + Validate>(v: &serde_json::Value) -> Result<(), Error> {
    let t: T = crate::json::from_value_ref(v)?;
    t.validate()
}

impl<R: Resource> OpOptions<R> {
    /// Default options.
    pub fn new() -> Self {
        OpOptions::default()
    }

    /// Only administrators may call the operation (401 anonymous, 403 other users).
    #[must_use]
    pub fn admin_only(mut self, yes: bool) -> Self {
        self.admin_only = yes;
        self
    }

    /// Anyone may call the operation, without a token.
    #[must_use]
    pub fn public(mut self, yes: bool) -> Self {
        self.public = yes;
        self
    }

    /// Responds with `S` (built `From` the model) instead of the generated response schema.
    #[must_use]
    pub fn schema<S>(mut self) -> Self
    where
        S: From<R> + Serialize + schemars::JsonSchema,
    {
        self.response = Some((schema_of::<S>, render_as::<R, S>));
        self.presenter = None;
        self.members = Some(crate::crud::query::sparse::members_of::<S>);
        self
    }

    /// Responds with `P::Output`, built by `P` with database access.
    #[must_use]
    pub fn present<P: Present<R>>(mut self) -> Self
    where
        R: 'static,
    {
        self.presenter = Some((output_schema::<R, P>, present_with::<R, P>));
        self.response = None;
        self.members = Some(crate::crud::query::sparse::members_of::<P::Output>);
        self
    }

    /// Accepts bodies of type `T` instead of the generated input schema: a body must first
    /// be a valid `T`; `T`'s members then feed the generated input.
    #[must_use]
    pub fn arg_schema<T>(mut self) -> Self
    where
        T: DeserializeOwned + Serialize + schemars::JsonSchema + Validate,
    {
        self.input = Some((schema_of::<T>, parse_as::<T>));
        self
    }
}

/// The setting of one operation in an options map: `false` disables it, options enable it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum OpSetting<R> {
    /// The operation is not mounted.
    Disabled,
    /// The operation is mounted with these options.
    Enabled(OpOptions<R>),
}

impl<R> From<bool> for OpSetting<R> {
    fn from(on: bool) -> Self {
        if on {
            OpSetting::Enabled(OpOptions::default())
        } else {
            OpSetting::Disabled
        }
    }
}

impl<R> From<OpOptions<R>> for OpSetting<R> {
    fn from(o: OpOptions<R>) -> Self {
        OpSetting::Enabled(o)
    }
}
