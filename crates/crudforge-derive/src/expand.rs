//! Code generation: input and output schemas, validation, and the `Resource` impl with its
//! typed queries, instantiated once per backend.
//!
//! [`expand`] lists the emitted items in order; each is written by its own function:
//! `schemas` (the body and response types, with their OpenAPI schema attributes),
//! `validate` (the `Validate` impls), `resource` (the `Resource` impl, its metadata and the
//! registration), `field_info` (one entry of its `FIELDS`, also read by `table`, the model-first
//! table) and `backend` (everything that differs between SQLite and PostgreSQL).

use crate::ast::{Field, Kind, Model};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

mod backend;
mod field_info;
mod members;
mod resource;
mod rules;
mod schemas;
mod table;
mod validate;

use backend::BackendKind;

/// Names of the generated types.
pub(crate) struct Names {
    pub(crate) filter: Ident,
    pub(crate) create: Ident,
    pub(crate) update: Ident,
    pub(crate) response: Ident,
}

/// The names of the types generated for the model `ident` (`CritterCreate`, ...).
pub(crate) fn names(ident: &Ident) -> Names {
    Names {
        filter: format_ident!("{}Filter", ident),
        create: format_ident!("{}Create", ident),
        update: format_ident!("{}Update", ident),
        response: format_ident!("{}Response", ident),
    }
}

/// Items emitted next to the errors when the input is invalid, so code naming them does not
/// fail a second time.
pub(crate) fn fallback(ident: &Ident, vis: &syn::Visibility) -> TokenStream {
    let n = names(ident);
    let (c, u, r, f) = (&n.create, &n.update, &n.response, &n.filter);
    quote! {
        #vis struct #f {}
        #vis struct #c {}
        #vis struct #u {}
        #vis struct #r {}
    }
}

/// Whether clients write the field (in POST and PATCH bodies).
fn is_writable(f: &Field) -> bool {
    f.attrs.skip.is_none()
        && f.attrs.read_only.is_none()
        && f.ident != "id"
        && f.attrs.id.is_none()
        && !f.is_base()
}

/// Whether the POST body can be copied (derives `Clone`): every writable field is of a type the
/// derive knows (all `Clone`), or a file member; not a field of the application's own type,
/// which need not be `Clone`.
fn copyable(g: &Gen<'_>) -> bool {
    g.writable
        .iter()
        .all(|f| f.kind.is_some_and(|k| k != Kind::Other) || f.attrs.file.is_some())
}

/// Whether clients may change the field (in PATCH bodies): a writable field the server does
/// not set and that is not create-only.
fn is_updatable(f: &Field) -> bool {
    is_writable(f) && f.attrs.set.is_none() && f.attrs.create_only.is_none()
}

/// Whether the field is in the response body.
fn is_returned(f: &Field) -> bool {
    f.attrs.skip.is_none() && f.attrs.write_only.is_none() && f.attrs.password.is_none()
}

/// Whether filters and `sort` may name the field.
fn is_filterable(f: &Field) -> bool {
    f.attrs.skip.is_none()
        && f.attrs.write_only.is_none()
        && f.attrs.password.is_none()
        && f.kind.is_some_and(|k| k != Kind::Json)
        && !matches!(f.attrs.filter, Some((false, _)))
}

/// What every emitting function reads: the model, the paths into the runtime, the generated
/// names and the model's fields sorted by role.
struct Gen<'a> {
    m: &'a Model,
    /// The runtime crate (`::crudforge` unless `crate = "..."`).
    k: &'a syn::Path,
    /// The runtime's hidden module for generated code, `#k::__private`.
    p: TokenStream,
    n: Names,
    /// The resource name (`Critter`).
    name: String,
    /// The primary-key field.
    id: &'a Field,
    /// The fields of the POST body (those the server sets included, filled before decoding).
    writable: Vec<&'a Field>,
    /// The fields of the PATCH body.
    updatable: Vec<&'a Field>,
    returned: Vec<&'a Field>,
    filterable: Vec<&'a Field>,
}

impl<'a> Gen<'a> {
    fn new(m: &'a Model) -> Self {
        let k = &m.krate;
        let of = |keep: fn(&Field) -> bool| m.fields.iter().filter(|f| keep(f)).collect();
        Gen {
            m,
            k,
            p: quote!(#k::__private),
            n: names(&m.ident),
            name: m.name(),
            id: m.id_field().expect("checked in valid"),
            writable: of(is_writable),
            updatable: of(is_updatable),
            returned: of(is_returned),
            filterable: of(is_filterable),
        }
    }
}

/// The whole expansion of a valid model, in the order the items are emitted.
pub(crate) fn expand(m: &Model) -> TokenStream {
    let g = Gen::new(m);
    let create = schemas::create_struct(&g);
    let filter = schemas::filter_alias(&g);
    let create_defaults = schemas::create_defaults(&g);
    let one_of_fns = schemas::one_of_fns(&g);
    let update = schemas::update_struct(&g);
    let response = schemas::response_struct(&g);
    let response_from = schemas::response_from(&g);
    let validate_create = validate::validate_impl(&g, &g.n.create, &g.writable, 0);
    let validate_update = validate::validate_impl(&g, &g.n.update, &g.updatable, 1);
    let type_checks = resource::type_checks(&g);
    let sqlite = backend::backend(&g, BackendKind::Sqlite);
    let pg = backend::backend(&g, BackendKind::Postgres);
    let resource_impl = resource::resource_impl(&g);
    let registration = resource::registration(&g);
    let table = table::table_macro(&g);
    quote! {
        #table
        #create
        #filter
        #create_defaults
        #one_of_fns
        #update
        #response
        #response_from
        #validate_create
        #validate_update

        #[allow(non_snake_case, unused_imports, clippy::all)]
        const _: () = {
            #type_checks
            #sqlite
            #pg
            #resource_impl
            #registration
        };
    }
}
