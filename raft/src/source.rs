//! A foreign library's error kept whole inside ours: shareable (our errors
//! are `Clone`, handed to every caller of a batch) and comparable (by its
//! words, the only thing every library error offers).

use std::fmt;
use std::sync::Arc;

/// A foreign error, its source chain intact.
#[derive(Clone)]
pub struct Source(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Source {
    /// Wraps `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Source(Arc::new(e))
    }

    /// The wrapped error, to downcast or walk.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Source {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Two sources are equal when they say the same.
impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Source {}

/// A value that should not have been there, kept for the error's words
/// (its `Debug` form): an answer of the wrong kind, say.
#[derive(Clone)]
pub struct Dump(Arc<dyn fmt::Debug + Send + Sync + 'static>);

impl Dump {
    /// Keeps `value`.
    pub fn new(value: impl fmt::Debug + Send + Sync + 'static) -> Self {
        Dump(Arc::new(value))
    }
}

impl fmt::Debug for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Two dumps are equal when they print the same.
impl PartialEq for Dump {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl Eq for Dump {}
