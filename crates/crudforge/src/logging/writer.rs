//! Log lines to stderr in batches: a request appends its line to a shared buffer and a thread
//! of its own writes what has gathered, many lines in one `write`, instead of one system call
//! per line on the request's worker.
//!
//! Nothing is dropped: past [`MAX_PENDING`] bytes (stderr slower than the lines come) the line's
//! own thread writes the backlog and its line itself, which holds it up as a plain stderr
//! writer would. Lines keep their order, whoever writes them. Lines wait at most about
//! [`GATHER`] plus one write; [`flush`](super::flush) writes what waits at once, for the moment
//! before the process exits.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

/// Bytes waiting past which a line's own thread writes them (1 MiB).
pub(crate) const MAX_PENDING: usize = 1 << 20;

/// How long the writer thread lets lines gather after a write before it looks again.
pub(crate) const GATHER: Duration = Duration::from_millis(2);

/// The process's one batched stderr writer, its thread started on first use.
pub(crate) fn stderr() -> Batched {
    static STDERR: OnceLock<Batched> = OnceLock::new();
    STDERR
        .get_or_init(|| Batched::new(Box::new(std::io::stderr()), MAX_PENDING))
        .clone()
}

/// A [`MakeWriter`] for `tracing-subscriber` that batches lines to stderr.
#[derive(Clone)]
pub(crate) struct Batched(Arc<Shared>);

impl Batched {
    /// A writer to `out`, with a thread of its own; a line's own thread writes once
    /// `max_pending` bytes wait.
    fn new(out: Box<dyn Write + Send>, max_pending: usize) -> Batched {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            arrived: Condvar::new(),
            out: Mutex::new(out),
            max_pending,
        });
        let for_thread = Arc::clone(&shared);
        let started = std::thread::Builder::new()
            .name("crudforge-log".into())
            .spawn(move || for_thread.run());
        if started.is_err() {
            // No thread: every line is written by its own thread.
            lock(&shared.state).direct = true;
        }
        Batched(shared)
    }

    /// Writes the lines that wait, on the calling thread.
    pub(crate) fn flush(&self) {
        let mut state = lock(&self.0.state);
        let pending = std::mem::take(&mut state.pending);
        let mut out = lock(&self.0.out);
        drop(state);
        let _ = out.write_all(&pending);
        let _ = out.flush();
    }
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a line arrives while the writer thread waits.
    arrived: Condvar,
    /// Where lines go; whoever writes holds it, so lines keep their order.
    out: Mutex<Box<dyn Write + Send>>,
    max_pending: usize,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    /// The writer thread waits on `arrived` (rather than writing or gathering).
    idle: bool,
    /// There is no writer thread.
    direct: bool,
}

/// Locks, ignoring poisoning: a panic while holding a lock leaves whole lines behind.
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// The writer thread: wait for lines, write them all, let more gather, again.
    fn run(&self) {
        loop {
            let mut state = lock(&self.state);
            while state.pending.is_empty() {
                state.idle = true;
                state = self
                    .arrived
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            state.idle = false;
            let batch = std::mem::take(&mut state.pending);
            // Taking the output before letting go of the buffer keeps lines in order against
            // a line written by its own thread.
            let mut out = lock(&self.out);
            drop(state);
            let _ = out.write_all(&batch);
            let _ = out.flush();
            drop(out);
            std::thread::sleep(GATHER);
        }
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let mut state = lock(&self.state);
        if state.direct || state.pending.len() + line.len() > self.max_pending {
            let backlog = std::mem::take(&mut state.pending);
            let mut out = lock(&self.out);
            drop(state);
            out.write_all(&backlog)?;
            out.write_all(line)?;
            return out.flush();
        }
        let wake = state.idle && state.pending.is_empty();
        state.pending.extend_from_slice(line);
        drop(state);
        if wake {
            self.arrived.notify_one();
        }
        Ok(())
    }
}

/// What one log event writes through.
pub(crate) struct Line<'a>(&'a Shared);

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Batched {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// An output that keeps what it is given.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Kept {
        fn text(&self) -> String {
            String::from_utf8(lock(&self.0).clone()).expect("utf-8")
        }
    }

    /// Writes `n` numbered lines from each of `threads` threads.
    fn write_lines(w: &Batched, threads: usize, n: usize) {
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || {
                    for i in 0..n {
                        let line = format!("thread {t} line {i}\n");
                        w.make_writer().write_all(line.as_bytes()).expect("write");
                    }
                });
            }
        });
    }

    /// Every line arrived whole, and each thread's lines in the order it wrote them.
    fn assert_all_in_order(text: &str, threads: usize, n: usize) {
        let mut next = vec![0; threads];
        for line in text.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(words.len(), 4, "whole line: {line:?}");
            let t: usize = words[1].parse().expect("thread");
            let i: usize = words[3].parse().expect("line");
            assert_eq!(i, next[t], "thread {t}'s lines in order");
            next[t] += 1;
        }
        assert_eq!(next, vec![n; threads], "every line arrived");
    }

    #[test]
    fn the_thread_writes_every_line_in_order() {
        let kept = Kept::default();
        let w = Batched::new(Box::new(kept.clone()), MAX_PENDING);
        write_lines(&w, 4, 500);
        // The writer thread gets there without a flush.
        let deadline = Instant::now() + Duration::from_secs(30);
        while kept.text().lines().count() < 2000 {
            assert!(Instant::now() < deadline, "lines never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_all_in_order(&kept.text(), 4, 500);
    }

    #[test]
    fn past_the_bound_lines_are_written_by_their_own_thread_in_order() {
        let kept = Kept::default();
        // Room for about two lines: most lines overflow and are written directly.
        let w = Batched::new(Box::new(kept.clone()), 40);
        write_lines(&w, 3, 300);
        w.flush();
        assert_all_in_order(&kept.text(), 3, 300);
    }

    #[test]
    fn after_flush_every_earlier_line_is_out() {
        let kept = Kept::default();
        let w = Batched::new(Box::new(kept.clone()), MAX_PENDING);
        // Hold the output so the thread cannot write yet.
        let held = lock(&w.0.out);
        w.make_writer().write_all(b"last words\n").expect("write");
        drop(held);
        w.flush();
        assert_eq!(kept.text(), "last words\n");
    }
}
