//! How a row looks to a view ([`Shape`]): what the live feed compares to write each row once
//! for all the subscribers who see it alike.

use super::{project, View};
use crate::crud::rules::read;
use crate::crud::Resource;
use crate::error::Error;

impl<'a, R: Resource> View<'a, R> {
    /// How `row` looks to this view: the members it leaves out and the ones it keeps.
    pub(crate) fn shape(&self, row: &R) -> Shape<'a> {
        Shape {
            hidden: read::hidden(row, self.viewer),
            fields: self.fields,
        }
    }
}

/// How a row looks to one view: the members left out and those kept. Views with equal shapes
/// show a row alike (the feed writes a row once per distinct shape among its subscribers).
#[derive(PartialEq, Eq)]
pub(crate) struct Shape<'a> {
    hidden: Vec<&'static str>,
    fields: Option<&'a [&'static str]>,
}

impl Shape<'_> {
    /// `whole` (the row's generated representation with every member) in this shape.
    ///
    /// # Errors
    ///
    /// 500 when `whole` is not a JSON object.
    pub(crate) fn apply(&self, whole: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = whole.to_vec();
        project::strip(&mut out, 0, &self.hidden)?;
        match self.fields {
            Some(f) => project::reshape(&out, None, Some(f)),
            None => Ok(out),
        }
    }
}
