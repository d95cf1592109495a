//! The values a write sends in a member rule (`@new.member`): `@new.member <op> value`, and
//! `member <op> @new.member`, parsed into [`CallerTerm::Sent`] and [`CallerTerm::Against`].

use super::{error, CallerTerm, Parser, Tree};
use crate::condition::Op;
use crate::error::Error;
use crate::field::{FieldInfo, Kind};
use crudforge_core::expr::Tok;

impl<T: Tree> Parser<'_, T> {
    /// The field `@new.<member>` (`name`, at `pos`) names: a filterable field of the
    /// resource itself, in a member rule.
    pub(super) fn sent_field(&self, name: &str, pos: usize) -> Result<&'static FieldInfo, Error> {
        let member = crudforge_core::expr::new_member(name).unwrap_or(name);
        if !self.sent {
            return Err(error(
                pos,
                format!(
                    "`@{name}` (a value the write sends) belongs to member rules, not to rules \
                     on whole rows"
                ),
            ));
        }
        self.fields
            .iter()
            .find(|f| f.name == member && f.filterable)
            .ok_or_else(|| {
                error(
                    pos,
                    format!(
                        "`@{name}`: `{member}` is not a filterable field; filterable fields: {}",
                        self.fields
                            .iter()
                            .filter(|f| f.filterable)
                            .map(|f| f.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }

    /// Refuses an ordering (`<`, `>=`, ...) of a sent value whose kind the server and the
    /// database might order differently (text by collation) or not at all.
    pub(super) fn sent_op(field: &FieldInfo, op: Op, pos: usize) -> Result<(), Error> {
        let ordered = matches!(
            field.kind,
            Kind::Integer | Kind::Float | Kind::Date | Kind::DateTime
        );
        match op {
            Op::Gt | Op::Gte | Op::Lt | Op::Lte if !ordered => Err(error(
                pos,
                format!(
                    "a sent `{}` is compared with `=`, `!=`, `in` or `is null`",
                    field.name
                ),
            )),
            Op::Like | Op::ILike => Err(error(
                pos,
                format!(
                    "a sent value is not matched with a pattern; compare `{}` with `=`, `!=` \
                     or `in`",
                    field.name
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The rest of `@new.member <op> value` (after `@new.member`, `name`, at `pos`).
    pub(super) fn sent_value(&mut self, name: &str, pos: usize) -> Result<T, Error> {
        let field = self.sent_field(name, pos)?;
        let op_pos = self.peek().1;
        let (o, _) = self.operator_for(field)?;
        Self::sent_op(field, o.op, op_pos)?;
        let arg = match o.op {
            Op::IsNull => self.null_check()?,
            Op::In => self.list(field)?,
            _ => {
                let (t, p) = self.peek().clone();
                if let Tok::Ident(w) = &t {
                    if crate::crud::query::clock::word(w, field.kind).is_some() {
                        return Err(error(
                            p,
                            format!(
                                "a sent `{}` is compared with a literal, not with `{w}`",
                                field.name
                            ),
                        ));
                    }
                }
                self.value(field)?
            }
        };
        self.term(
            CallerTerm::Sent {
                field: field.name,
                kind: field.kind,
                op: o.op,
                arg,
            },
            pos,
        )
    }
}
