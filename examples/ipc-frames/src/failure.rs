//! The binary's error: what went wrong, in words, with where it happened.

use std::fmt;

/// What went wrong.
#[derive(Debug)]
pub struct Failure(String);

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure(e.to_string())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// A failure saying `what`.
pub fn fail(what: impl Into<String>) -> Failure {
    Failure(what.into())
}

/// Says where an error happened.
pub trait Context<T> {
    fn context(self, what: &str) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: &str) -> Result<T> {
        self.map_err(|e| Failure(format!("{what}: {e}")))
    }
}
