//! What a file member may declare, shared by the derive (which checks a model's declarations
//! at compile time) and the runtime (which enforces them): the media types the server can
//! recognize from a file's content, which of them a browser may show inline, and the grammar
//! of a size (`"5 MiB"`).

/// A media type the server recognizes from a file's first bytes, and whether a browser may
/// show it inline (a raster image format: no script can run in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaType {
    /// The type as `Content-Type` writes it (`image/png`).
    pub name: &'static str,
    /// Served with `Content-Disposition: inline` rather than `attachment`.
    pub inline: bool,
}

/// Every media type a file member may accept. Each is recognized by its magic bytes; formats
/// without a reliable signature (plain text, CSV, SVG, HTML) are not in the list, so they can
/// never be declared: their content could not be told apart from a disguised document.
pub const MEDIA_TYPES: &[MediaType] = &[
    MediaType {
        name: "image/png",
        inline: true,
    },
    MediaType {
        name: "image/jpeg",
        inline: true,
    },
    MediaType {
        name: "image/gif",
        inline: true,
    },
    MediaType {
        name: "image/webp",
        inline: true,
    },
    MediaType {
        name: "image/avif",
        inline: true,
    },
    MediaType {
        name: "image/bmp",
        inline: true,
    },
    MediaType {
        name: "image/tiff",
        inline: false,
    },
    MediaType {
        name: "image/heif",
        inline: false,
    },
    MediaType {
        name: "application/pdf",
        inline: false,
    },
    MediaType {
        name: "application/zip",
        inline: false,
    },
    MediaType {
        name: "application/gzip",
        inline: false,
    },
    MediaType {
        name: "audio/mpeg",
        inline: false,
    },
    MediaType {
        name: "audio/ogg",
        inline: false,
    },
    MediaType {
        name: "video/mp4",
        inline: false,
    },
    MediaType {
        name: "video/webm",
        inline: false,
    },
];

/// The entry of [`MEDIA_TYPES`] named `name` (compared without case).
#[must_use]
pub fn media_type(name: &str) -> Option<&'static MediaType> {
    MEDIA_TYPES
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The media types a thumbnail can be made from (the decoders the `thumbnails` feature
/// compiles in).
pub const THUMBNAIL_SOURCES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/bmp",
];

/// The largest side of a thumbnail, in pixels.
pub const MAX_THUMBNAIL_SIDE: u32 = 4096;

/// Reads a thumbnail's box, `"WxH"` (`"320x240"`): the thumbnail fits inside it, keeping the
/// image's proportions. Each side is 1 to [`MAX_THUMBNAIL_SIDE`] pixels.
///
/// # Errors
///
/// Why the text is not a box.
pub fn parse_box(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once('x')
        .ok_or_else(|| format!("`{text}` is not a box: write WIDTHxHEIGHT, such as \"320x240\""))?;
    let side = |v: &str| -> Result<u32, String> {
        let n: u32 = v.parse().map_err(|_| {
            format!("`{text}` is not a box: write WIDTHxHEIGHT, such as \"320x240\"")
        })?;
        if n == 0 || n > MAX_THUMBNAIL_SIDE {
            return Err(format!(
                "`{text}`: each side is 1 to {MAX_THUMBNAIL_SIDE} pixels"
            ));
        }
        Ok(n)
    };
    Ok((side(w)?, side(h)?))
}

/// Reads a size: a whole number of bytes, optionally followed by a unit, `B`, `KiB`, `MiB` or
/// `GiB` (powers of 1024; `KB`, `MB`, `GB` are refused as ambiguous). Zero is refused.
///
/// # Errors
///
/// Why the text is not a size.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = t.split_at(digits);
    if number.is_empty() {
        return Err(format!("`{text}` does not start with a number"));
    }
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is too large"))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "`{other}` is not a unit: write B, KiB, MiB or GiB (powers of 1024)"
            ))
        }
    };
    match n.checked_mul(scale) {
        Some(0) => Err("a size must be more than zero bytes".into()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("`{text}` is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("5 MiB"), Ok(5 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("7 B"), Ok(7));
        assert!(parse_size("5 MB").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("99999999999999999999 GiB").is_err());
    }

    #[test]
    fn boxes() {
        assert_eq!(parse_box("320x240"), Ok((320, 240)));
        assert!(parse_box("320").is_err());
        assert!(parse_box("0x10").is_err());
        assert!(parse_box("5000x10").is_err());
        assert!(parse_box("axb").is_err());
    }

    #[test]
    fn media_types() {
        assert!(media_type("IMAGE/PNG").is_some_and(|m| m.inline));
        assert!(media_type("application/pdf").is_some_and(|m| !m.inline));
        assert!(media_type("image/svg+xml").is_none());
        assert!(media_type("text/html").is_none());
    }
}
