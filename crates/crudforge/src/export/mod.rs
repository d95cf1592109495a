//! Export and import of a blueprint's items (the `export` feature), one folder plugged into
//! the core through the seam: `GET <prefix>export/` streams the list as CSV or NDJSON
//! ([`stream`]), `POST <prefix>import/` writes a CSV or NDJSON file through the batch create's
//! path ([`import`]); [`cells`] turns values into CSV cells and back; `part` holds the
//! blueprint's `export()` and `import()` and their routes, `docs` their description, `cli` the
//! command line's `export` and `import`. See
//! [data.md](https://github.com/crudforge/crudforge/blob/main/docs/data.md).

pub(crate) mod cells;
pub(crate) mod cli;
mod docs;
pub(crate) mod import;
mod part;
pub(crate) mod stream;

/// The export's path below the blueprint's prefix.
pub(crate) const EXPORT_PATH: &str = "export/";
/// The import's path below the blueprint's prefix.
pub(crate) const IMPORT_PATH: &str = "import/";

/// The media type of CSV, as answered and accepted.
pub(crate) const CSV: &str = "text/csv";
/// The media type of NDJSON (one JSON value per line), as answered and accepted.
pub(crate) const NDJSON: &str = "application/x-ndjson";

/// The two formats of an export or import file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Comma-separated values, a header row of member names first (RFC 4180).
    Csv,
    /// One JSON object per line.
    Ndjson,
}

impl Format {
    /// The format a media type (without parameters, any case) names.
    pub(crate) fn of_media_type(media: &str) -> Option<Format> {
        let essence = media.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case(CSV) {
            Some(Format::Csv)
        } else if essence.eq_ignore_ascii_case(NDJSON)
            || essence.eq_ignore_ascii_case("application/ndjson")
        {
            Some(Format::Ndjson)
        } else {
            None
        }
    }

    /// The media type answered for the format.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Ndjson => NDJSON,
        }
    }

    /// The file name extension of the format.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
        }
    }
}
