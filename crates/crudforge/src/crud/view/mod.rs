//! One view of a row: how items reach one caller through one operation. A [`View`] is made
//! once per (operation, caller, `fields=`) and decides everything about the bytes sent for a
//! row: the generated representation, a substituted schema or a presenter; the members the
//! caller may not read (left out); embedded related items (`expand`); the sparse projection;
//! the file members' URLs (set around the generated representation's serialization by
//! [`crate::rendering`]); and the `ETag`, always computed on the generated representation as
//! the caller sees it. The list, `GET`, the write answers, `expand`, the export and the feed
//! all write rows through it.

mod project;
// Only the live feed shows one row to many views at once.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
mod shape;
mod without;

pub(crate) use project::{embed, Embedded};

use super::shared::Shared;
use super::Resource;
use crate::crud::conditional::tag_of;
use crate::crud::options::{Operation, PresentFn, Render};
use crate::crud::rows::reload;
use crate::crud::rules::read::{self, Viewer};
use crate::db::{Conn, Database};
use crate::error::Error;
use actix_web::http::header;
use actix_web::HttpResponse;

/// What an operation answers with for a row.
enum Answer<R> {
    /// The generated representation (`R::Response`).
    Generated,
    /// A substituted response schema, written from the row.
    Schema(Render<R>),
    /// A presenter: whole pages turned into bodies, with database access.
    Presenter(PresentFn<R>),
}

/// How one operation shows rows to one caller (see the module's documentation).
pub(crate) struct View<'a, R> {
    answer: Answer<R>,
    viewer: Viewer<'a>,
    /// `fields=`: the members kept (`rel.sub` for an embedded item's); `None` keeps all.
    fields: Option<&'a [&'static str]>,
}

impl<'a, R: Resource> View<'a, R> {
    /// How operation `op` of `shared` shows rows to `viewer`, all their readable members.
    pub(crate) fn new(shared: &Shared<R>, op: Operation, viewer: Viewer<'a>) -> Self {
        let options = shared.ops.get(&op);
        let answer = match options.map(|o| (o.presenter, o.response)) {
            Some((Some((_, present)), _)) => Answer::Presenter(present),
            Some((None, Some((_, render)))) => Answer::Schema(render),
            _ => Answer::Generated,
        };
        View {
            answer,
            viewer,
            fields: None,
        }
    }

    /// The generated representation as `viewer` sees it, whatever an operation substitutes
    /// (what the feed sends, and what every `ETag` is computed on).
    pub(crate) fn generated(viewer: Viewer<'a>) -> Self {
        View {
            answer: Answer::Generated,
            viewer,
            fields: None,
        }
    }

    /// The view kept to `fields` (`fields=`) when given.
    pub(crate) fn fields(mut self, fields: Option<&'a [&'static str]>) -> Self {
        self.fields = fields;
        self
    }

    /// Whether the operation answers with the generated representation, so that an item's
    /// body and its `ETag` come from one serialization.
    pub(crate) fn is_generated(&self) -> bool {
        matches!(self.answer, Answer::Generated)
    }

    /// Writes `item` to `out` without the members the viewer may not read (any answer but a
    /// presenter's; before embedding and projection).
    fn write(&self, out: &mut Vec<u8>, item: R) -> Result<(), Error> {
        let hidden = read::hidden(&item, self.viewer);
        match self.answer {
            Answer::Schema(render) => {
                // A substituted schema may have any shape: its members are removed once
                // written.
                let start = out.len();
                render(out, item)
                    .map_err(|e| Error::Internal(format!("serializing a response: {e}")))?;
                project::strip(out, start, &hidden)
            }
            _ => write_generated(out, item, &hidden),
        }
    }

    /// Writes each of `items` as this view shows it, in order, with its embedded members from
    /// `embedded` (one list per item) when given, handing each body to `each`. A presenter
    /// makes the bodies of all the items at once.
    ///
    /// # Errors
    ///
    /// Rendering errors, the presenter's, and those of `each`.
    pub(crate) async fn each(
        &self,
        db: &Database,
        items: Vec<R>,
        embedded: Option<Vec<Embedded>>,
        each: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.each_kept(db, items, embedded, self.fields, each).await
    }

    /// [`View::each`], kept to `fields` rather than the view's own.
    async fn each_kept(
        &self,
        db: &Database,
        items: Vec<R>,
        embedded: Option<Vec<Embedded>>,
        fields: Option<&[&'static str]>,
        mut each: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut embedded = embedded.map(Vec::into_iter);
        let mut finish = |body: &[u8]| {
            let members = embedded.as_mut().and_then(Iterator::next);
            if members.is_none() && fields.is_none() {
                return each(body);
            }
            each(&project::reshape(body, members, fields)?)
        };
        if let Answer::Presenter(present) = self.answer {
            let hidden: Vec<_> = items
                .iter()
                .map(|item| read::hidden(item, self.viewer))
                .collect();
            for (mut body, hidden) in present(db, items).await?.into_iter().zip(&hidden) {
                project::strip(&mut body, 0, hidden)?;
                finish(&body)?;
            }
            return Ok(());
        }
        let mut one = Vec::with_capacity(256);
        for item in items {
            one.clear();
            self.write(&mut one, item)?;
            finish(&one)?;
        }
        Ok(())
    }

    /// [`View::each`]'s bodies, collected.
    ///
    /// # Errors
    ///
    /// As [`View::each`].
    pub(crate) async fn bodies(
        &self,
        db: &Database,
        items: Vec<R>,
        embedded: Option<Vec<Embedded>>,
    ) -> Result<Vec<Vec<u8>>, Error> {
        let mut out = Vec::with_capacity(items.len());
        self.each(db, items, embedded, |body| {
            out.push(body.to_vec());
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// The `ETag` of `item` as the viewer sees it, and its body as this view shows it with
    /// `embedded` members: the tag is computed on the generated representation (read again
    /// when the operation answers otherwise), or on the body with its embedded members when
    /// there are some, before the projection to `fields`.
    ///
    /// # Errors
    ///
    /// Rendering and database errors.
    pub(crate) async fn represent(
        &self,
        conn: &mut Conn,
        db: &Database,
        item: R,
        embedded: Option<Embedded>,
    ) -> Result<(String, Vec<u8>), Error> {
        let (mut etag, mut body) = if self.is_generated() {
            self.tagged(item)?
        } else {
            let (etag, _) = self.tagged(reload(conn, &item).await?)?;
            let mut body = None;
            self.each_kept(db, vec![item], None, None, |b| {
                body = Some(b.to_vec());
                Ok(())
            })
            .await?;
            (
                etag,
                body.ok_or_else(|| Error::Internal("the presenter returned nothing".into()))?,
            )
        };
        if let Some(members) = embedded {
            // The tag of an answer with embedded items is computed on the body sent.
            body = serde_json::to_vec(&embed(&body, members)?)
                .map_err(|e| Error::Internal(e.to_string()))?;
            etag = tag_of(&body);
        }
        if self.fields.is_some() {
            body = project::reshape(&body, None, self.fields)?;
        }
        Ok((etag, body))
    }

    /// [`View::represent`] for the rows of a batch (no embedding): their tags, and their
    /// bodies (through the operation's presenter once for all of them, when it has one).
    ///
    /// # Errors
    ///
    /// Rendering and database errors.
    pub(crate) async fn represent_all(
        &self,
        conn: &mut Conn,
        db: &Database,
        items: Vec<R>,
    ) -> Result<(Vec<String>, Vec<Vec<u8>>), Error> {
        if self.is_generated() && self.fields.is_none() {
            return items.into_iter().map(|item| self.tagged(item)).collect();
        }
        let mut etags = Vec::with_capacity(items.len());
        for item in &items {
            etags.push(self.tagged(reload(conn, item).await?)?.0);
        }
        let bodies = self.bodies(db, items, None).await?;
        Ok((etags, bodies))
    }

    /// The `ETag` of `item` and its generated representation as the viewer sees it (whatever
    /// the operation answers with): two callers who see different members get different
    /// tags.
    ///
    /// # Errors
    ///
    /// The representation cannot be serialized (500).
    pub(crate) fn tagged(&self, item: R) -> Result<(String, Vec<u8>), Error> {
        let hidden = read::hidden(&item, self.viewer);
        let mut body = Vec::with_capacity(512);
        write_generated(&mut body, item, &hidden)?;
        Ok((tag_of(&body), body))
    }
}

/// Writes the generated representation of `item` to `out` without the members `hidden`
/// (left out while it is written, by the serializer adaptor of `without.rs`), with the file
/// members' URLs the surfaces set around it.
///
/// # Errors
///
/// The representation cannot be serialized (500).
pub(crate) fn write_generated<R: Resource>(
    out: &mut Vec<u8>,
    item: R,
    hidden: &[&str],
) -> Result<(), Error> {
    let _rendering = crate::rendering(&item);
    let response = R::Response::from(item);
    let written = if hidden.is_empty() {
        serde_json::to_writer(&mut *out, &response)
    } else {
        without::to_writer(out, &response, hidden)
    };
    written.map_err(|e| Error::Internal(format!("serializing a response: {e}")))
}

/// A JSON response with `status` and `body`.
pub(crate) fn json(status: actix_web::http::StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(body)
}

/// Sets the `ETag` header (a tag that is not a valid header value is left out).
pub(crate) fn set_etag(res: &mut HttpResponse, etag: &str) {
    if let Ok(v) = header::HeaderValue::from_str(etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
}
