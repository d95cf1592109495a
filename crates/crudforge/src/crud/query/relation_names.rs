//! The relation names clients write in dotted parameter names: `habitat.name` in a `filter`
//! expression, in a `habitat.name__ilike` parameter or in a `sort` key names the field `name`
//! of the relation `habitat`. The `filter` parser and the list parameters resolve such names
//! here, against the resource's relations as [`RelFields`].

use crate::field::FieldInfo;

/// A resource's relations as the parsers read them: each one's name and its target's fields.
pub(crate) type RelFields<'a> = &'a [(&'static str, &'static [FieldInfo])];

/// The relation and its target's fields a dotted name (`habitat.name`, `habitat.name__ilike`)
/// starts with, and the rest of the name.
pub(crate) fn related_param<'n>(
    rels: RelFields<'_>,
    name: &'n str,
) -> Option<(&'static str, &'static [FieldInfo], &'n str)> {
    let (rel, rest) = name.split_once('.')?;
    rels.iter()
        .find(|(r, _)| *r == rel)
        .map(|(r, f)| (*r, *f, rest))
}
