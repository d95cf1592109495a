//! Thumbnails of image files (the `thumbnails` feature), made on first request by the `image`
//! crate and kept beside their file: the image's size is read from its header first, and one
//! of more than [`MAX_PIXELS`] is refused before anything is decoded (a decompression bomb
//! declares billions of pixels in a few bytes); decoding then runs under the same limits.
//!
//! A decode takes the memory of the whole image (a 16-bit 6300×6300 PNG of a few hundred KiB
//! takes 300 MiB), so decodes are bounded: one per thumbnail at a time ([`Flight`]: the
//! requests that come while it runs wait for it and serve what it kept) and a few per API at
//! once ([`DECODE`] places: past them, 503 with `Retry-After`).

use crate::error::Error;
use std::collections::HashMap;
use std::io::Cursor;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// A thumbnail: the table and id of its file, and its box.
type ThumbKey = (&'static str, uuid::Uuid, (u32, u32));

/// The thumbnails being made, each with the lock its makers queue on.
static FLIGHTS: LazyLock<Mutex<HashMap<ThumbKey, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(Mutex::default);

/// A place in the queue of the requests making one thumbnail: whoever holds its lock makes
/// it (after looking again whether the one before kept it); the entry goes with its last
/// holder.
pub(crate) struct Flight {
    key: ThumbKey,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl Flight {
    /// Joins the queue of thumbnail `key`.
    pub(crate) fn join(key: ThumbKey) -> Flight {
        let mut flights = FLIGHTS.lock().unwrap_or_else(PoisonError::into_inner);
        let lock = flights.entry(key).or_default().clone();
        Flight { key, lock }
    }

    /// Waits for the turn of this request.
    pub(crate) async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.lock.lock().await
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        let mut flights = FLIGHTS.lock().unwrap_or_else(PoisonError::into_inner);
        // The map's reference and this one: no one else waits.
        if Arc::strong_count(&self.lock) == 2 {
            flights.remove(&self.key);
        }
    }
}

/// The kind of place ([`crate::places`]) a decode takes: at most `FILES_THUMB_MAX_DECODES`
/// at once per API.
pub(crate) const DECODE: &str = "thumbnail decode";

/// The refusal when every decode place is taken.
pub(crate) fn decodes_busy() -> Error {
    Error::Busy {
        detail:
            "Too many thumbnails are being made now (FILES_THUMB_MAX_DECODES); try again shortly."
                .into(),
        retry_after: 2,
    }
}

/// The most pixels an image may have to be made into a thumbnail (40 megapixels: a large
/// camera's photo).
pub(crate) const MAX_PIXELS: u64 = 40_000_000;

/// The most memory decoding one image may allocate.
const MAX_ALLOC: u64 = 512 << 20;

/// The media type of the thumbnails of a file of `media_type`: JPEG stays JPEG, every other
/// image becomes PNG.
pub(crate) fn thumb_type(media_type: &str) -> &'static str {
    if media_type.eq_ignore_ascii_case("image/jpeg") {
        "image/jpeg"
    } else {
        "image/png"
    }
}

fn unreadable(detail: impl std::fmt::Display) -> Error {
    Error::Validation {
        detail: format!("No thumbnail can be made of this file: {detail}"),
        field: None,
    }
}

/// A thumbnail of `source` (an image of `media_type`) fitting in `(w, h)`, keeping its
/// proportions (never enlarged), encoded as [`thumb_type`] says.
///
/// # Errors
///
/// 422 for an image past [`MAX_PIXELS`] or one that does not decode; 500 if encoding fails.
pub(crate) fn make(source: &[u8], media_type: &str, (w, h): (u32, u32)) -> Result<Vec<u8>, Error> {
    let reader = || {
        image::ImageReader::new(Cursor::new(source))
            .with_guessed_format()
            .map_err(unreadable)
    };
    let (sw, sh) = reader()?.into_dimensions().map_err(unreadable)?;
    if u64::from(sw) * u64::from(sh) > MAX_PIXELS {
        return Err(unreadable(format!(
            "it has {sw}×{sh} pixels; thumbnails are made of images of at most {MAX_PIXELS} pixels"
        )));
    }
    let mut decoder = reader()?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(sw);
    limits.max_image_height = Some(sh);
    limits.max_alloc = Some(MAX_ALLOC);
    decoder.limits(limits);
    let img = decoder.decode().map_err(unreadable)?;
    let small = if img.width() <= w && img.height() <= h {
        img
    } else {
        img.thumbnail(w, h)
    };
    let mut out = Cursor::new(Vec::new());
    let written = if thumb_type(media_type) == "image/jpeg" {
        small.to_rgb8().write_to(&mut out, image::ImageFormat::Jpeg)
    } else {
        small.write_to(&mut out, image::ImageFormat::Png)
    };
    written.map_err(|e| Error::Internal(format!("encoding a thumbnail: {e}")))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flight_ends_with_its_last_member() {
        let key = ("t", uuid::Uuid::new_v4(), (16, 16));
        let first = Flight::join(key);
        let second = Flight::join(key);
        assert!(Arc::ptr_eq(&first.lock, &second.lock));
        drop(first);
        assert!(FLIGHTS.lock().unwrap().contains_key(&key));
        drop(second);
        assert!(!FLIGHTS.lock().unwrap().contains_key(&key));
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(w, h, image::Rgb([200, 10, 10]));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn fits_the_box_and_keeps_proportions() {
        let t = make(&png(64, 48), "image/png", (16, 16)).unwrap();
        let img = image::load_from_memory(&t).unwrap();
        assert_eq!((img.width(), img.height()), (16, 12));
        // Never enlarged.
        let t = make(&png(8, 6), "image/png", (16, 16)).unwrap();
        let img = image::load_from_memory(&t).unwrap();
        assert_eq!((img.width(), img.height()), (8, 6));
    }

    #[test]
    fn a_bomb_is_refused_before_decoding() {
        // A PNG whose header declares 100,000 × 100,000 pixels.
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        // The header chunk's CRC-32 (over its type and data), so that only its size is wrong.
        let crc = bomb[12..29].iter().fold(!0u32, |mut c, b| {
            c ^= u32::from(*b);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
            }
            c
        });
        bomb[29..33].copy_from_slice(&(!crc).to_be_bytes());
        let e = make(&bomb, "image/png", (16, 16)).unwrap_err();
        assert!(e.to_string().contains("pixels"), "{e}");
        assert!(make(b"\x89PNG\r\n\x1a\n garbage", "image/png", (16, 16)).is_err());
    }
}
