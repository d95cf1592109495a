//! Parsing of `#[resource(...)]` (and the `#[diesel(table_name = ...)]` it reads).
//!
//! Every key is a [`Symbol`] constant, used both to recognise the key and to list the valid keys
//! in errors. While the attributes are read, each key's value collects in a [`keys::Attr`] (a
//! [`keys::BoolAttr`] for flags), which reports a key given twice; [`StructAttrs`] and
//! [`FieldAttrs`] are built from those once every attribute has been read. The values of the
//! keys are read by the files beside this one, one concern each: `validators` (the validation
//! keys), `model_first` (`references`, `on_delete`, `default`, `index`, `unique(...)`),
//! `relations` (`belongs_to`, `has_many`), `rules` (`read`, `scope`) and `members` (`set`,
//! `create_only`).

use crate::ctxt::Ctxt;
use crate::symbol::{
    Symbol, AGGREGATE, BELONGS_TO, CRATE, CREATE_ONLY, DEFAULT, DIESEL, EMAIL, FILE, FILTER,
    HAS_MANY, ID, INDEX, MAX, MAX_LEN, MIN, MIN_LEN, MODEL_FIRST, NAME, ONE_OF, ON_DELETE,
    PASSWORD, PATTERN, READ, READ_ONLY, REFERENCES, RESOURCE, RULES, SCOPE, SEARCH, SET, SKIP,
    SOFT_DELETE, TABLE, TABLE_NAME, UNIQUE, VALIDATE, WRITE_ONLY,
};

mod aggregates;
mod files;
mod keys;
mod members;
mod model_first;
mod relations;
mod rule_exprs;
mod rules;
mod validators;
pub(crate) use aggregates::AggregateAttr;
#[cfg(test)]
pub(crate) use aggregates::USES as AGGREGATE_USES;
use keys::{skip_value, unknown_key, Attr, BoolAttr};
pub(crate) use members::SetAttr;
pub(crate) use model_first::IndexAttr;
pub(crate) use relations::{BelongsTo, HasMany};
pub(crate) use rule_exprs::RuleExpr;
pub(crate) use rules::{ReadAttr, ScopeAttr};
use syn::{Attribute, Expr, LitBool, LitStr, Path};
pub(crate) use validators::Number;

/// Keys accepted on the struct, in the order errors list them.
pub(crate) const STRUCT_KEYS: &[Symbol] = &[
    TABLE,
    NAME,
    RULES,
    CRATE,
    INDEX,
    UNIQUE,
    SOFT_DELETE,
    MODEL_FIRST,
    SCOPE,
    HAS_MANY,
    SEARCH,
];
/// Keys accepted on a field, in the order errors list them.
pub(crate) const FIELD_KEYS: &[Symbol] = &[
    ID,
    READ_ONLY,
    WRITE_ONLY,
    SKIP,
    FILTER,
    MAX_LEN,
    MIN_LEN,
    MIN,
    MAX,
    PATTERN,
    ONE_OF,
    VALIDATE,
    EMAIL,
    DEFAULT,
    PASSWORD,
    UNIQUE,
    REFERENCES,
    ON_DELETE,
    READ,
    BELONGS_TO,
    SET,
    CREATE_ONLY,
    FILE,
    AGGREGATE,
];

/// Struct-level options.
pub(crate) struct StructAttrs {
    /// `table = critters` or `#[diesel(table_name = critters)]`.
    pub(crate) table: Option<Path>,
    /// `name = "Critter"`.
    pub(crate) name: Option<LitStr>,
    /// `crate = "::crudforge"`.
    pub(crate) krate: Option<Path>,
    /// `rules = OwnerRules::USER_ID`: the resource's default permission rules.
    pub(crate) rules: Option<Expr>,
    /// `rules(read = "...", ...)`: the default rules as expressions.
    pub(crate) rule_exprs: Vec<RuleExpr>,
    /// Every `index("col_a", "col_b")`, in declaration order (the key may be repeated).
    pub(crate) indexes: Vec<IndexAttr>,
    /// Every composite unique constraint `unique("col_a", "col_b")`, in declaration order.
    pub(crate) uniques: Vec<IndexAttr>,
    /// `soft_delete`: DELETE sets `deleted_at`; the span of the key.
    pub(crate) soft_delete: Flag,
    /// `model_first`: the derive declares the table; the span of the key.
    pub(crate) model_first: Flag,
    /// Every named filter of every `scope(...)`, in declaration order.
    pub(crate) scopes: Vec<ScopeAttr>,
    /// Every `has_many(...)`, in declaration order.
    pub(crate) has_many: Vec<HasMany>,
    /// `search("name", "species")`: the searchable members, in order (empty: none).
    pub(crate) search: Vec<syn::LitStr>,
}

/// A flag and the token that set it (for error spans).
pub(crate) type Flag = Option<proc_macro2::Span>;

/// Field-level options.
pub(crate) struct FieldAttrs {
    pub(crate) id: Flag,
    pub(crate) read_only: Flag,
    pub(crate) write_only: Flag,
    pub(crate) skip: Flag,
    /// `filter = false` (span of the key) or `filter = true`.
    pub(crate) filter: Option<(bool, proc_macro2::Span)>,
    pub(crate) max_len: Option<(usize, proc_macro2::Span)>,
    /// `min_len = N`: strings of at least N characters.
    pub(crate) min_len: Option<(usize, proc_macro2::Span)>,
    /// `min = N`: numbers of at least N.
    pub(crate) min: Option<(Number, proc_macro2::Span)>,
    /// `max = N`: numbers of at most N.
    pub(crate) max: Option<(Number, proc_macro2::Span)>,
    /// `pattern = "regex"`: strings the regular expression matches (anywhere, unless anchored).
    pub(crate) pattern: Option<(LitStr, proc_macro2::Span)>,
    /// `one_of = [..]`: the values allowed, string or integer literals.
    pub(crate) one_of: Option<(Vec<syn::Lit>, proc_macro2::Span)>,
    /// `validate = path::to::function`: a check of the application's own.
    pub(crate) validate: Option<(Path, proc_macro2::Span)>,
    pub(crate) email: Flag,
    pub(crate) default: Option<Expr>,
    /// `password`: plaintext in bodies, stored as a bcrypt hash, never returned.
    pub(crate) password: Flag,
    /// `unique`: a unique index backs the column (it may serve as `res_id`).
    pub(crate) unique: Flag,
    /// `references = "authors"` (or `"authors.code"`): a foreign key, model-first only.
    pub(crate) references: Option<(LitStr, proc_macro2::Span)>,
    /// `on_delete = "cascade"`: `restrict` (default), `cascade` or `set_null`.
    pub(crate) on_delete: Option<(LitStr, proc_macro2::Span)>,
    /// `read = ...`: who may read the member (besides administrators).
    pub(crate) read: Option<(ReadAttr, proc_macro2::Span)>,
    /// `belongs_to(Target)`: the field holds the id of a `Target` item.
    pub(crate) belongs_to: Option<BelongsTo>,
    /// `set = me | now | path`: the server fills the member on create; clients never send it.
    pub(crate) set: Option<(SetAttr, proc_macro2::Span)>,
    /// `create_only`: clients send the member on create, never on update.
    pub(crate) create_only: Flag,
    /// `file(...)`: the member holds an uploaded file.
    pub(crate) file: Option<(files::FileAttr, proc_macro2::Span)>,
    /// `file` was written, valid or not (a malformed one was reported already).
    pub(crate) file_written: bool,
    /// `aggregate(...)`: what aggregates may do with the member.
    pub(crate) aggregate: Option<(AggregateAttr, proc_macro2::Span)>,
}

/// Reads the struct's attributes.
pub(crate) fn struct_attrs(cx: &Ctxt, attrs: &[Attribute]) -> StructAttrs {
    let mut table: Attr<'_, Path> = Attr::none(cx, TABLE);
    let mut name: Attr<'_, LitStr> = Attr::none(cx, NAME);
    let mut rules: Attr<'_, Expr> = Attr::none(cx, RULES);
    let mut krate: Attr<'_, Path> = Attr::none(cx, CRATE);
    let mut indexes: Vec<IndexAttr> = Vec::new();
    let mut uniques: Vec<IndexAttr> = Vec::new();
    let mut soft_delete = BoolAttr::none(cx, SOFT_DELETE);
    let mut model_first = BoolAttr::none(cx, MODEL_FIRST);
    let mut scopes: Vec<ScopeAttr> = Vec::new();
    let mut rule_exprs = Vec::new();
    let mut has_many = Vec::new();
    let mut search = None;
    // The first `#[diesel(table_name = ...)]`, the table when no `table` key is given.
    let mut diesel_table: Option<Path> = None;
    for attr in attrs {
        if attr.path() == DIESEL {
            // Only `table_name` matters here; Diesel checks the rest.
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path == TABLE_NAME {
                    let p: Path = meta.value()?.parse()?;
                    diesel_table.get_or_insert(p);
                    Ok(())
                } else {
                    skip_value(&meta)
                }
            });
            continue;
        }
        if attr.path() != RESOURCE {
            continue;
        }
        let r = attr.parse_nested_meta(|meta| {
            if meta.path == TABLE {
                table.set_with(&meta, |meta| meta.value()?.parse())
            } else if meta.path == NAME {
                name.set_with(&meta, |meta| meta.value()?.parse())
            } else if meta.path == RULES && meta.input.peek(syn::token::Paren) {
                rule_exprs::expressions(cx, &meta, &mut rule_exprs)
            } else if meta.path == RULES {
                rules.set_with(&meta, |meta| meta.value()?.parse())
            } else if meta.path == CRATE {
                krate.set_with(&meta, |meta| {
                    let s: LitStr = meta.value()?.parse()?;
                    s.parse()
                })
            } else if meta.path == SOFT_DELETE {
                soft_delete.set_true(&meta.path);
                Ok(())
            } else if meta.path == MODEL_FIRST {
                model_first.set_true(&meta.path);
                Ok(())
            } else if meta.path == SCOPE {
                rules::scopes(cx, &meta, &mut scopes)
            } else if meta.path == HAS_MANY {
                has_many.push(relations::has_many(&meta)?);
                Ok(())
            } else if meta.path == INDEX {
                model_first::index(cx, &meta, &mut indexes)
            } else if meta.path == UNIQUE {
                model_first::unique(cx, &meta, &mut uniques)
            } else if meta.path == SEARCH {
                model_first::search(cx, &meta, &mut search)
            } else {
                unknown_key(cx, &meta, STRUCT_KEYS)
            }
        });
        if let Err(e) = r {
            cx.syn_error(e);
        }
    }
    StructAttrs {
        table: table.get().or(diesel_table),
        name: name.get(),
        krate: krate.get(),
        rules: rules.get(),
        rule_exprs,
        indexes,
        uniques,
        soft_delete: soft_delete.get(),
        model_first: model_first.get(),
        scopes,
        has_many,
        search: search.unwrap_or_default(),
    }
}

/// Reads a field's attributes.
pub(crate) fn field_attrs(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut id = BoolAttr::none(cx, ID);
    let mut read_only = BoolAttr::none(cx, READ_ONLY);
    let mut write_only = BoolAttr::none(cx, WRITE_ONLY);
    let mut skip = BoolAttr::none(cx, SKIP);
    let mut filter: Attr<'_, bool> = Attr::none(cx, FILTER);
    let mut max_len: Attr<'_, usize> = Attr::none(cx, MAX_LEN);
    let mut min_len: Attr<'_, usize> = Attr::none(cx, MIN_LEN);
    let mut min: Attr<'_, Number> = Attr::none(cx, MIN);
    let mut max: Attr<'_, Number> = Attr::none(cx, MAX);
    let mut pattern: Attr<'_, LitStr> = Attr::none(cx, PATTERN);
    let mut one_of: Attr<'_, Vec<syn::Lit>> = Attr::none(cx, ONE_OF);
    let mut validate: Attr<'_, Path> = Attr::none(cx, VALIDATE);
    let mut email = BoolAttr::none(cx, EMAIL);
    let mut default: Attr<'_, Expr> = Attr::none(cx, DEFAULT);
    let mut password = BoolAttr::none(cx, PASSWORD);
    let mut unique = BoolAttr::none(cx, UNIQUE);
    let mut references: Attr<'_, LitStr> = Attr::none(cx, REFERENCES);
    let mut on_delete: Attr<'_, LitStr> = Attr::none(cx, ON_DELETE);
    let mut read: Attr<'_, ReadAttr> = Attr::none(cx, READ);
    let mut belongs_to: Attr<'_, BelongsTo> = Attr::none(cx, BELONGS_TO);
    let mut set: Attr<'_, SetAttr> = Attr::none(cx, SET);
    let mut create_only = BoolAttr::none(cx, CREATE_ONLY);
    let mut file: Attr<'_, files::FileAttr> = Attr::none(cx, FILE);
    let mut file_written = false;
    let mut aggregate: Attr<'_, AggregateAttr> = Attr::none(cx, AGGREGATE);
    for attr in attrs.iter().filter(|a| a.path() == RESOURCE) {
        let r = attr.parse_nested_meta(|meta| {
            let p = &meta.path;
            if p == ID {
                id.set_true(p);
            } else if p == READ_ONLY {
                read_only.set_true(p);
            } else if p == WRITE_ONLY {
                write_only.set_true(p);
            } else if p == SKIP {
                skip.set_true(p);
            } else if p == PASSWORD {
                password.set_true(p);
            } else if p == UNIQUE {
                unique.set_true(p);
            } else if p == EMAIL {
                email.set_true(p);
            } else if p == CREATE_ONLY {
                create_only.set_true(p);
            } else if p == SET {
                set.set_with(&meta, members::set)?;
            } else if p == FILTER {
                filter.set_with(&meta, |meta| {
                    let b: LitBool = meta
                        .value()
                        .and_then(|v| v.parse())
                        .map_err(|_| meta.error("expected `filter = false` or `filter = true`"))?;
                    Ok(b.value)
                })?;
            } else if p == MAX_LEN {
                max_len.set_with(&meta, |meta| validators::max_len(cx, meta))?;
            } else if p == MIN_LEN {
                min_len.set_with(&meta, validators::min_len)?;
            } else if p == MIN {
                min.set_with(&meta, |meta| validators::number(meta, MIN))?;
            } else if p == MAX {
                max.set_with(&meta, |meta| validators::number(meta, MAX))?;
            } else if p == PATTERN {
                pattern.set_with(&meta, validators::pattern)?;
            } else if p == ONE_OF {
                one_of.set_with(&meta, validators::one_of)?;
            } else if p == VALIDATE {
                validate.set_with(&meta, validators::validate)?;
            } else if p == REFERENCES {
                references.set_with(&meta, model_first::references)?;
            } else if p == ON_DELETE {
                on_delete.set_with(&meta, model_first::on_delete)?;
            } else if p == READ {
                read.set_with(&meta, rules::read_rule)?;
            } else if p == BELONGS_TO {
                belongs_to.set_with(&meta, relations::belongs_to)?;
            } else if p == DEFAULT {
                default.set_with(&meta, model_first::default)?;
            } else if p == FILE {
                file_written = true;
                file.set_with(&meta, files::file)?;
            } else if p == AGGREGATE {
                aggregate.set_with(&meta, aggregates::aggregate)?;
            } else {
                unknown_key(cx, &meta, FIELD_KEYS)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            cx.syn_error(e);
        }
    }
    FieldAttrs {
        id: id.get(),
        read_only: read_only.get(),
        write_only: write_only.get(),
        skip: skip.get(),
        filter: filter.get_with_span(),
        max_len: max_len.get_with_span(),
        min_len: min_len.get_with_span(),
        min: min.get_with_span(),
        max: max.get_with_span(),
        pattern: pattern.get_with_span(),
        one_of: one_of.get_with_span(),
        validate: validate.get_with_span(),
        email: email.get(),
        unique: unique.get(),
        default: default.get(),
        password: password.get(),
        references: references.get_with_span(),
        on_delete: on_delete.get_with_span(),
        read: read.get_with_span(),
        belongs_to: belongs_to.get(),
        set: set.get_with_span(),
        create_only: create_only.get(),
        file: file.get_with_span(),
        file_written,
        aggregate: aggregate.get_with_span(),
    }
}

#[cfg(test)]
mod tests {
    use super::{field_attrs, struct_attrs, FIELD_KEYS, STRUCT_KEYS};
    use crate::ctxt::Ctxt;
    use crate::symbol::{
        AGGREGATE, BELONGS_TO, CRATE, DEFAULT, FILE, FILTER, HAS_MANY, INDEX, MAX, MAX_LEN, MIN,
        MIN_LEN, MODEL_FIRST, NAME, ONE_OF, ON_DELETE, PATTERN, READ, REFERENCES, RULES, SCOPE,
        SEARCH, SET, SOFT_DELETE, TABLE, UNIQUE, VALIDATE,
    };
    use quote::{quote, ToTokens};
    use syn::{Attribute, Ident};

    /// The errors `cx` collected, as text.
    fn errors(cx: Ctxt) -> String {
        cx.check()
            .err()
            .map_or_else(String::new, |e| e.to_compile_error().to_string())
    }

    #[test]
    fn a_table_given_twice_is_reported_across_attributes() {
        let input: syn::DeriveInput = syn::parse_quote! {
            #[resource(table = critters)]
            #[resource(table = animals, crate = "::a", crate = "::b")]
            struct Critter {}
        };
        let cx = Ctxt::default();
        let _ = struct_attrs(&cx, &input.attrs);
        let err = cx
            .check()
            .expect_err("duplicates")
            .to_compile_error()
            .to_string();
        assert!(
            err.contains("duplicate resource attribute `table`"),
            "{err}"
        );
        assert!(
            err.contains("duplicate resource attribute `crate`"),
            "{err}"
        );
    }

    #[test]
    fn integer_bounds_are_kept_exactly_and_floats_finite() {
        let attr: Attribute = syn::parse_quote!(#[resource(min = -9007199254740993, max = 2.5)]);
        let cx = Ctxt::default();
        let a = field_attrs(&cx, &[attr]);
        assert_eq!(errors(cx), "");
        let (min, _) = a.min.unwrap();
        assert_eq!(min.integer, Some(-9_007_199_254_740_993));
        let (max, _) = a.max.unwrap();
        assert_eq!((max.integer, max.value), (None, 2.5));
        let attr: Attribute = syn::parse_quote!(#[resource(max = 1e400)]);
        let cx = Ctxt::default();
        let _ = field_attrs(&cx, &[attr]);
        assert!(errors(cx).contains("expected a number"));
    }

    #[test]
    fn every_listed_key_is_read() {
        for key in FIELD_KEYS {
            let ident = Ident::new(key.as_str(), proc_macro2::Span::call_site());
            let value = match *key {
                FILTER => quote!(= false),
                MAX_LEN | MIN_LEN | MIN | MAX => {
                    quote!(= 3)
                }
                DEFAULT => quote!(= 1),
                PATTERN => quote!(= "^[a-z]+$"),
                ONE_OF => quote!(= ["cat", "dog"]),
                VALIDATE => quote!(= checks::isbn),
                REFERENCES => quote!(= "authors"),
                ON_DELETE => quote!(= "cascade"),
                READ => quote!(= admin),
                BELONGS_TO => quote!((Habitat)),
                SET => quote!(= me),
                FILE => quote!((max_size = "1 MiB", types = ["image/png"])),
                AGGREGATE => quote!((group_by, sum)),
                _ => quote!(),
            };
            let attr: Attribute = syn::parse_quote!(#[resource(#ident #value)]);
            let cx = Ctxt::default();
            let _ = field_attrs(&cx, &[attr]);
            assert_eq!(errors(cx), "", "field key `{key}`");
        }
        for key in STRUCT_KEYS {
            let ident = Ident::new(key.as_str(), proc_macro2::Span::call_site());
            let value = match *key {
                TABLE => quote!(= critters),
                NAME => quote!(= "Critter"),
                RULES => quote!(= Rules::OWNER),
                CRATE => quote!(= "::crudforge"),
                INDEX => quote!(("species", "cuteness_level")),
                UNIQUE => quote!(("event_id", "seat")),
                SOFT_DELETE | MODEL_FIRST => quote!(),
                SCOPE => quote!((overdue = "due < now")),
                HAS_MANY => quote!((critters = Critter, key = "habitat_id")),
                SEARCH => quote!(("name", "species")),
                _ => panic!("no sample value for struct key `{key}`"),
            };
            let attr: Attribute = syn::parse_quote!(#[resource(#ident #value)]);
            let cx = Ctxt::default();
            let _ = struct_attrs(&cx, &[attr]);
            assert_eq!(errors(cx), "", "struct key `{key}`");
        }
    }

    #[test]
    fn set_reads_me_now_or_a_path_and_reports_the_rest() {
        use super::SetAttr;
        let read = |attr: Attribute| {
            let cx = Ctxt::default();
            let a = field_attrs(&cx, &[attr]);
            (a.set.map(|(s, _)| s), errors(cx))
        };
        let (set, err) = read(syn::parse_quote!(#[resource(set = me)]));
        assert!(matches!(set, Some(SetAttr::Me)) && err.is_empty(), "{err}");
        let (set, err) = read(syn::parse_quote!(#[resource(set = now, create_only)]));
        assert!(matches!(set, Some(SetAttr::Now)) && err.is_empty(), "{err}");
        let (set, _) = read(syn::parse_quote!(#[resource(set = crate::sales::channel)]));
        let Some(SetAttr::Function(path)) = set else {
            panic!("a path")
        };
        assert_eq!(
            path.to_token_stream().to_string(),
            "crate :: sales :: channel"
        );
        let (_, err) = read(syn::parse_quote!(#[resource(set = @me)]));
        assert!(err.contains("without `@`"), "{err}");
        let (_, err) = read(syn::parse_quote!(#[resource(set = "me")]));
        assert!(
            err.contains("expected `me`, `now` or a function's path"),
            "{err}"
        );
    }

    #[test]
    fn a_repeated_key_is_reported_and_its_last_value_kept() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[resource(max_len = 10, skip)]),
            syn::parse_quote!(#[resource(max_len = 20, skip)]),
        ];
        let cx = Ctxt::default();
        let a = field_attrs(&cx, &attrs);
        assert_eq!(a.max_len.map(|(n, _)| n), Some(20));
        assert!(a.skip.is_some());
        let err = errors(cx);
        assert!(
            err.contains("duplicate resource attribute `max_len`"),
            "{err}"
        );
        assert!(err.contains("duplicate resource attribute `skip`"), "{err}");
    }

    #[test]
    fn a_malformed_repeat_is_reported_as_a_repeat_too() {
        let attr: Attribute = syn::parse_quote!(#[resource(max_len = 10, max_len = "ten")]);
        let cx = Ctxt::default();
        let a = field_attrs(&cx, &[attr]);
        assert_eq!(a.max_len.map(|(n, _)| n), Some(10));
        let err = errors(cx);
        let duplicate = err.find("duplicate resource attribute `max_len`");
        let malformed = err.find("expected a length");
        assert!(
            duplicate.is_some() && malformed.is_some() && duplicate < malformed,
            "{err}"
        );
    }

    #[test]
    fn indexes_are_read_in_order_and_mistakes_reported() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[resource(index("species", "cuteness_level"), table = critters)]),
            syn::parse_quote!(#[resource(index("created_at", "id"))]),
        ];
        let cx = Ctxt::default();
        let a = struct_attrs(&cx, &attrs);
        assert_eq!(errors(cx), "");
        let cols: Vec<Vec<String>> = a
            .indexes
            .iter()
            .map(|i| i.columns.iter().map(syn::LitStr::value).collect())
            .collect();
        assert_eq!(
            cols,
            vec![vec!["species", "cuteness_level"], vec!["created_at", "id"]]
        );
        assert!(a.table.is_some(), "keys after an index are read");

        let bad: Vec<Attribute> = vec![
            syn::parse_quote!(#[resource(index("species", "species"), index(), index = 3)]),
            syn::parse_quote!(#[resource(index(species), index("id DESC", a::b), index("x"), index("x"), name = "C")]),
        ];
        let cx = Ctxt::default();
        let a = struct_attrs(&cx, &bad);
        let err = errors(cx);
        for expected in [
            "`species` appears twice in this index",
            "an index needs at least one column",
            "expected the indexed columns in parentheses",
            "write the column as a string: `\\\"species\\\"`",
            "expected a column name, not \\\"id DESC\\\"",
            "expected a column name in quotes",
            "this index is declared twice",
        ] {
            assert!(err.contains(expected), "{expected}: {err}");
        }
        assert!(a.name.is_some(), "keys after malformed indexes are read");
    }

    #[test]
    fn composite_uniques_are_read_and_mistakes_reported() {
        let attrs: Vec<Attribute> = vec![syn::parse_quote!(
            #[resource(unique("event_id", "seat"), index("event_id"), unique("a", "b", "c"))]
        )];
        let cx = Ctxt::default();
        let a = struct_attrs(&cx, &attrs);
        assert_eq!(errors(cx), "");
        let cols: Vec<Vec<String>> = a
            .uniques
            .iter()
            .map(|i| i.columns.iter().map(syn::LitStr::value).collect())
            .collect();
        assert_eq!(cols, vec![vec!["event_id", "seat"], vec!["a", "b", "c"]]);
        assert_eq!(a.indexes.len(), 1, "an index beside them is an index");

        let bad: Vec<Attribute> = vec![
            syn::parse_quote!(#[resource(unique("seat"), unique(), unique, unique("a", "a"))]),
            syn::parse_quote!(#[resource(unique("x", "y"), unique("y", "x"), unique(seat, "b"), name = "C")]),
        ];
        let cx = Ctxt::default();
        let a = struct_attrs(&cx, &bad);
        let err = errors(cx);
        for expected in [
            "a composite unique constraint needs two members or more\\nhelp: for `seat` alone, mark the field",
            "a composite unique constraint needs two members or more\\nhelp: write `unique(",
            "expected the members in parentheses",
            "`a` appears twice in this unique constraint",
            "this unique constraint is declared twice",
            "write the column as a string: `\\\"seat\\\"`",
        ] {
            assert!(err.contains(expected), "{expected}: {err}");
        }
        assert!(
            a.name.is_some(),
            "keys after malformed constraints are read"
        );
    }

    #[test]
    fn the_table_key_wins_over_the_diesel_table_name() {
        let table = |attrs: Vec<Attribute>| {
            let cx = Ctxt::default();
            let table = struct_attrs(&cx, &attrs).table;
            assert_eq!(errors(cx), "");
            table.map(|p| p.to_token_stream().to_string())
        };
        let diesel_a: Attribute = syn::parse_quote!(#[diesel(table_name = a)]);
        let diesel_c: Attribute =
            syn::parse_quote!(#[diesel(check_for_backend(Pg), table_name = c)]);
        let resource_b: Attribute = syn::parse_quote!(#[resource(table = b)]);
        assert_eq!(
            table(vec![diesel_a.clone(), resource_b.clone()]).as_deref(),
            Some("b")
        );
        assert_eq!(
            table(vec![resource_b, diesel_a.clone()]).as_deref(),
            Some("b")
        );
        assert_eq!(
            table(vec![diesel_a, diesel_c.clone()]).as_deref(),
            Some("a")
        );
        assert_eq!(table(vec![diesel_c]).as_deref(), Some("c"));
    }
}
