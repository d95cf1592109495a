//! The model a derive input describes: its table, name and typed fields.

use crate::attr::{self, FieldAttrs, StructAttrs};
use crate::ctxt::Ctxt;
use syn::ext::IdentExt as _;
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Data, DeriveInput, Fields, GenericArgument, Ident, Path, PathArguments, Token, Type,
    Visibility,
};

pub(crate) use crudforge_core::Kind;

/// Classifies a field's type by its last path segment.
pub(crate) trait Classify {
    /// The kind of `ty`, or why it cannot be stored.
    fn of(ty: &Type) -> Result<Kind, String>;
}

impl Classify for Kind {
    fn of(ty: &Type) -> Result<Kind, String> {
        match ty {
            Type::Path(tp) if tp.qself.is_none() => {
                let Some(last) = tp.path.segments.last() else {
                    return Err("an empty type path".into());
                };
                let name = last.ident.to_string();
                Ok(match name.as_str() {
                    "String" => Kind::Text,
                    "i16" | "i32" | "i64" => Kind::Integer,
                    "f32" | "f64" => Kind::Float,
                    "bool" => Kind::Bool,
                    "Uuid" => Kind::Uuid,
                    "DateTime" => Kind::DateTime,
                    "NaiveDate" => Kind::Date,
                    "Value" => Kind::Json,
                    "Vec" | "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" | "VecDeque"
                    | "Box" | "Rc" | "Arc" | "Cow" => {
                        return Err(format!("`{name}` cannot be stored in a column"));
                    }
                    "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i128" | "u128" | "isize" => {
                        return Err(format!(
                            "`{name}` has no portable SQL type; use i16, i32 or i64"
                        ));
                    }
                    "str" => return Err("`str` cannot be owned by a model; use String".into()),
                    _ => Kind::Other,
                })
            }
            Type::Reference(r) => Err(match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => {
                    "a reference cannot be stored; use `String`".into()
                }
                _ => "a reference cannot be stored; use an owned type".into(),
            }),
            Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => {
                Err("a tuple, array or slice cannot be stored in one column".into())
            }
            _ => Err("this type cannot be stored in a column".into()),
        }
    }
}

/// One field of the model.
pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// The type inside `Option<_>`, or the type itself.
    pub(crate) inner: Type,
    pub(crate) nullable: bool,
    /// `None` when the type cannot be stored (an error was reported).
    pub(crate) kind: Option<Kind>,
    pub(crate) attrs: FieldAttrs,
    pub(crate) docs: Vec<Attribute>,
}

impl Field {
    /// The member's name, as serde writes it and as the table names the column: a raw
    /// identifier (`r#type`) without its `r#`.
    pub(crate) fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    pub(crate) fn is_base(&self) -> bool {
        matches!(self.name().as_str(), "created_at" | "updated_at")
    }
}

/// The whole model.
pub(crate) struct Model {
    pub(crate) ident: Ident,
    pub(crate) vis: Visibility,
    pub(crate) attrs: StructAttrs,
    pub(crate) fields: Vec<Field>,
    pub(crate) krate: Path,
}

impl Model {
    /// The resource name (`Critter`).
    pub(crate) fn name(&self) -> String {
        self.attrs
            .name
            .as_ref()
            .map_or_else(|| self.ident.unraw().to_string(), syn::LitStr::value)
    }

    /// The primary-key field.
    pub(crate) fn id_field(&self) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| f.attrs.id.is_some())
            .or_else(|| self.fields.iter().find(|f| f.ident == "id"))
    }
}

fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(tp) = ty else { return None };
    let last = tp.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// Reads the derive input. Shape errors (enum, tuple struct, generics) are reported and give
/// `None`.
pub(crate) fn parse(cx: &Ctxt, input: &DeriveInput) -> Option<Model> {
    let attrs = attr::struct_attrs(cx, &input.attrs);
    reject_generics(cx, input);
    let named = named_fields(cx, input)?;
    let krate = attrs
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::crudforge));
    let mut fields: Vec<Field> = named.iter().filter_map(|f| field(cx, f)).collect();
    if attrs.soft_delete.is_some() {
        deleted_at_read_only(&mut fields);
    }
    Some(Model {
        ident: input.ident.clone(),
        vis: input.vis.clone(),
        attrs,
        fields,
        krate,
    })
}

/// Reports generic parameters: a resource maps one table with fixed column types.
fn reject_generics(cx: &Ctxt, input: &DeriveInput) {
    if !input.generics.params.is_empty() {
        cx.error(
            &input.generics,
            "a resource cannot be generic: it maps one table with fixed column types\nhelp: remove the parameters and name concrete types in the fields",
        );
    }
}

/// The struct's named fields; any other shape (tuple or unit struct, enum, union) is reported
/// and gives `None`.
fn named_fields<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
) -> Option<&'a Punctuated<syn::Field, Token![,]>> {
    let ident = &input.ident;
    let named_help = format!(
        "help: write `struct {ident} {{ id: uuid::Uuid, created_at: DateTime<Utc>, updated_at: DateTime<Utc>, .. }}`, one named field per column"
    );
    match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(n) => Some(&n.named),
            Fields::Unnamed(u) => {
                cx.error(
                    u,
                    format!("Resource needs named fields: each field is a column and a JSON member\n{named_help}"),
                );
                None
            }
            Fields::Unit => {
                cx.error(
                    ident,
                    format!("Resource needs a struct with fields: at least the id and the timestamps\n{named_help}"),
                );
                None
            }
        },
        Data::Enum(e) => {
            let enum_token = e.enum_token;
            cx.error(
                quote::quote!(#enum_token #ident),
                format!("Resource can only be derived for a struct with named fields, not an enum\n{named_help}"),
            );
            None
        }
        Data::Union(u) => {
            let union_token = u.union_token;
            cx.error(
                quote::quote!(#union_token #ident),
                format!("Resource can only be derived for a struct with named fields, not a union\n{named_help}"),
            );
            None
        }
    }
}

/// Reads one named field: its attributes, its type with `Option` unwrapped, its kind and docs.
fn field(cx: &Ctxt, f: &syn::Field) -> Option<Field> {
    let ident = f.ident.clone()?;
    let fa = attr::field_attrs(cx, &f.attrs);
    let (inner, nullable) = match option_inner(&f.ty) {
        Some(t) => (t.clone(), true),
        None => (f.ty.clone(), false),
    };
    // A file member is stored as JSON (its name, size, type and id): never filtered.
    let kind = if fa.file.is_some() {
        Some(Kind::Json)
    } else {
        field_kind(cx, &inner, fa.skip.is_some())
    };
    let docs = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .cloned()
        .collect();
    Some(Field {
        ident,
        ty: f.ty.clone(),
        inner,
        nullable,
        kind,
        attrs: fa,
        docs,
    })
}

/// The kind of the stored type `inner`; a type that cannot be stored is reported, unless the
/// field is skipped.
fn field_kind(cx: &Ctxt, inner: &Type, skipped: bool) -> Option<Kind> {
    if skipped {
        return Kind::of(inner).ok();
    }
    match Kind::of(inner) {
        Ok(k) => Some(k),
        Err(why) => {
            cx.error(
                inner,
                format!(
                    "{why}\nhelp: resource fields are String, i16, i32, i64, f32, f64, bool, uuid::Uuid, chrono::DateTime<Utc>, chrono::NaiveDate, serde_json::Value, or Option of one of them"
                ),
            );
            None
        }
    }
}

/// Makes a soft-delete model's `deleted_at` the server's: returned, filterable, never sent.
fn deleted_at_read_only(fields: &mut [Field]) {
    for f in fields.iter_mut().filter(|f| f.ident == "deleted_at") {
        if f.attrs.read_only.is_none() && f.attrs.write_only.is_none() {
            f.attrs.read_only = Some(f.ident.span());
        }
    }
}
