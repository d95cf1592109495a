//! Where commands read their secrets from and write their output to: the process's own
//! streams, or memory for tests.

use super::BoxError;
use std::io::{BufRead, Write};

/// Where a command reads its secrets from and writes its output to: the process's own
/// streams (the default), or memory ([`Console::captured`], for tests).
pub struct Console {
    input: Box<dyn BufRead>,
    pub(crate) out: Sink,
    pub(crate) err: Sink,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

pub(crate) enum Sink {
    Stdout,
    Stderr,
    Memory(Vec<u8>),
}

impl Sink {
    pub(crate) fn write(&mut self, text: &str) {
        self.write_bytes(text.as_bytes());
    }

    /// Writes `bytes` as they are (a file's content, which may cut a character in two).
    pub(crate) fn write_bytes(&mut self, bytes: &[u8]) {
        // A closed stdout (`| head`) is no reason to fail the command.
        let _ = match self {
            Sink::Stdout => std::io::stdout().lock().write_all(bytes),
            Sink::Stderr => std::io::stderr().lock().write_all(bytes),
            Sink::Memory(v) => v.write_all(bytes),
        };
    }

    fn text(&self) -> String {
        match self {
            Sink::Memory(v) => String::from_utf8_lossy(v).into_owned(),
            _ => String::new(),
        }
    }
}

impl Console {
    /// The process's standard input, output and error.
    pub(crate) fn std() -> Console {
        Console {
            input: Box::new(std::io::BufReader::new(std::io::stdin())),
            out: Sink::Stdout,
            err: Sink::Stderr,
        }
    }

    /// `input` as standard input; output and errors kept in memory
    /// ([`Console::output`], [`Console::errors`]).
    pub fn captured(input: &str) -> Console {
        Console {
            input: Box::new(std::io::Cursor::new(input.as_bytes().to_vec())),
            out: Sink::Memory(Vec::new()),
            err: Sink::Memory(Vec::new()),
        }
    }

    /// What the commands wrote on standard output (captured consoles only).
    pub fn output(&self) -> String {
        self.out.text()
    }

    /// What the commands wrote on standard error (captured consoles only).
    pub fn errors(&self) -> String {
        self.err.text()
    }

    /// The first line of standard input, without its line ending.
    pub(crate) fn read_line(&mut self) -> Result<String, BoxError> {
        let mut line = String::new();
        self.input.read_line(&mut line)?;
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// Whether standard error is the process's own and a terminal: where a progress bar may be
    /// drawn (never on a captured console, nor in a pipe).
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn stderr_is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        matches!(self.err, Sink::Stderr) && std::io::stderr().is_terminal()
    }

    pub(crate) fn println(&mut self, line: &str) {
        self.out.write(&format!("{line}\n"));
    }

    pub(crate) fn eprintln(&mut self, line: &str) {
        self.err.write(&format!("{line}\n"));
    }
}
