//! Collects every error of one expansion, so users see all their mistakes at once.

use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

/// An error collector.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanning `tokens`.
    pub(crate) fn error<T: ToTokens, M: Display>(&self, tokens: T, msg: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Records an error at a span.
    pub(crate) fn error_at<M: Display>(&self, span: proc_macro2::Span, msg: M) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Records a parse error.
    pub(crate) fn syn_error(&self, e: syn::Error) {
        self.errors.borrow_mut().push(e);
    }

    /// All errors, combined, if any.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}
