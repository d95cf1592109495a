//! The names the derive recognises in attributes, each spelt once, and their comparison with
//! parsed paths and identifiers.

use std::fmt::{self, Display};
use syn::{Ident, Path};

/// A name the derive reads in an attribute: an attribute's own name (`resource`) or one of its
/// keys (`max_len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Symbol(&'static str);

/// `#[resource(...)]`, the derive's own attribute.
pub(crate) const RESOURCE: Symbol = Symbol("resource");
/// `#[diesel(...)]`, read for its `table_name` only.
pub(crate) const DIESEL: Symbol = Symbol("diesel");
/// `table_name` in `#[diesel(...)]`.
pub(crate) const TABLE_NAME: Symbol = Symbol("table_name");

/// Struct key `table = critters`.
pub(crate) const TABLE: Symbol = Symbol("table");
/// Struct key `name = "Critter"`.
pub(crate) const NAME: Symbol = Symbol("name");
/// Struct key `rules = expr`.
pub(crate) const RULES: Symbol = Symbol("rules");
/// Struct key `crate = "::crudforge"`.
pub(crate) const CRATE: Symbol = Symbol("crate");
/// Struct key `index("col_a", "col_b")`, repeatable: an index the resource's queries need.
pub(crate) const INDEX: Symbol = Symbol("index");
/// Struct key `search("name", "species")`: the members of the full-text search, `q=`.
pub(crate) const SEARCH: Symbol = Symbol("search");
/// Struct key `scope(overdue = "...")`, repeatable: named filters clients ask for by name.
pub(crate) const SCOPE: Symbol = Symbol("scope");
/// Struct flag `soft_delete`: DELETE sets `deleted_at` instead of removing the row.
pub(crate) const SOFT_DELETE: Symbol = Symbol("soft_delete");
/// Struct flag `model_first`: the derive declares the table (`table!`, DDL) from the struct.
pub(crate) const MODEL_FIRST: Symbol = Symbol("model_first");

/// Field key `references = "authors"` (model-first): a foreign key to `authors(id)`.
pub(crate) const REFERENCES: Symbol = Symbol("references");
/// Field key `on_delete = "cascade"`: what deleting the referenced row does.
pub(crate) const ON_DELETE: Symbol = Symbol("on_delete");
/// Struct key `has_many(critters = Critter, key = "habitat_id")`, repeatable: a relation to
/// the items of another resource whose field holds this item's id.
pub(crate) const HAS_MANY: Symbol = Symbol("has_many");
/// Field key `belongs_to(Habitat)`: the field holds the id of an item of another resource.
pub(crate) const BELONGS_TO: Symbol = Symbol("belongs_to");

/// Field flag `id`.
pub(crate) const ID: Symbol = Symbol("id");
/// Field flag `read_only`.
pub(crate) const READ_ONLY: Symbol = Symbol("read_only");
/// Field flag `unique`: the column has a unique index (it may then serve as `res_id`).
pub(crate) const UNIQUE: Symbol = Symbol("unique");
/// Field flag `write_only`.
pub(crate) const WRITE_ONLY: Symbol = Symbol("write_only");
/// Field flag `skip`.
pub(crate) const SKIP: Symbol = Symbol("skip");
/// Field key `filter = false` / `filter = true`.
pub(crate) const FILTER: Symbol = Symbol("filter");
/// Field key `max_len = 100`.
pub(crate) const MAX_LEN: Symbol = Symbol("max_len");
/// Field key `min_len = 1`.
pub(crate) const MIN_LEN: Symbol = Symbol("min_len");
/// Field key `min = 0` (numbers).
pub(crate) const MIN: Symbol = Symbol("min");
/// Field key `max = 100` (numbers).
pub(crate) const MAX: Symbol = Symbol("max");
/// Field key `pattern = "^[a-z]+$"`.
pub(crate) const PATTERN: Symbol = Symbol("pattern");
/// Field key `one_of = ["a", "b"]`.
pub(crate) const ONE_OF: Symbol = Symbol("one_of");
/// Field key `validate = path::to::function`.
pub(crate) const VALIDATE: Symbol = Symbol("validate");
/// Field flag `email`.
pub(crate) const EMAIL: Symbol = Symbol("email");
/// Field key `default = expr`.
pub(crate) const DEFAULT: Symbol = Symbol("default");
/// Field key `read = admin` / `read = owner(user_id)` / `read = path::to::rule`.
pub(crate) const READ: Symbol = Symbol("read");
/// Field flag `password`.
pub(crate) const PASSWORD: Symbol = Symbol("password");
/// Field key `set = me` / `set = now` / `set = path::to::function`: the server fills the
/// member on create; clients never send it.
pub(crate) const SET: Symbol = Symbol("set");
/// Field flag `create_only`: clients send the member on create, never on update.
pub(crate) const CREATE_ONLY: Symbol = Symbol("create_only");
/// `file(max_size = "...", types = [...])`: the member holds an uploaded file.
pub(crate) const FILE: Symbol = Symbol("file");
/// Field key `aggregate(group_by, sum, ..)` or `aggregate(none)`: what aggregates may do with
/// the member, instead of what its type allows by default.
pub(crate) const AGGREGATE: Symbol = Symbol("aggregate");

impl Symbol {
    /// The name as written in source.
    pub(crate) fn as_str(self) -> &'static str {
        self.0
    }
}

impl Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

/// A path equals a symbol when it is that single identifier: no leading `::`, one segment, no
/// generic arguments (the rule of `Path::is_ident`).
impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.get_ident().is_some_and(|ident| ident == word)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        **self == *word
    }
}

#[cfg(test)]
mod tests {
    use super::{Symbol, CRATE, MAX_LEN};
    use syn::{Ident, Path};

    /// Compares through the generic bound, so the by-reference impls are exercised too.
    fn is<T: PartialEq<Symbol>>(found: T, word: Symbol) -> bool {
        found == word
    }

    #[test]
    fn a_path_matches_only_as_a_single_identifier() {
        let plain: Path = syn::parse_quote!(max_len);
        let rooted: Path = syn::parse_quote!(::max_len);
        let nested: Path = syn::parse_quote!(a::max_len);
        let other: Path = syn::parse_quote!(max_length);
        assert!(plain == MAX_LEN);
        assert!(is(&plain, MAX_LEN));
        assert!(rooted != MAX_LEN);
        assert!(nested != MAX_LEN);
        assert!(other != MAX_LEN);
    }

    #[test]
    fn a_keyword_key_matches() {
        let krate = Ident::new("crate", proc_macro2::Span::call_site());
        assert!(krate == CRATE);
        assert!(is(&krate, CRATE));
        assert_eq!(CRATE.to_string(), "crate");
    }
}
