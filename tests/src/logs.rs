//! The log lines a test's code writes: [`capture`] installs a subscriber on the current thread
//! that keeps them, until its guard is dropped.

use std::sync::{Arc, Mutex, PoisonError};

/// The log lines written while the guard of [`capture`] lives.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

/// Keeps the lines logged on this thread at `level` or above (plain text, no colours) while
/// the guard lives.
pub fn capture(level: tracing::Level) -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(level)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}
