//! [`Text`]: the words of an error, static or made at run time, at the size of a `&str`.

use core::fmt;

/// The words of an error: a `&'static str`, or (with the `alloc` feature) an owned text made at
/// run time, shared by the error's clones (`Arc<str>`). Either is the size of a `&str`, so
/// [`Error`](super::Error) is as large with owned texts as without, and only an owned text allocates (once,
/// where the error is made: on its path, never on a success path).
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Static(&'static str),
    #[cfg(feature = "alloc")]
    Owned(alloc::sync::Arc<str>),
}

impl Text {
    /// A text of static words; `const`, so errors can be made in constants.
    #[inline]
    pub const fn from_static(text: &'static str) -> Text {
        Text(TextRepr::Static(text))
    }

    /// The words.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            TextRepr::Static(s) => s,
            #[cfg(feature = "alloc")]
            TextRepr::Owned(s) => s,
        }
    }

    /// The words when they are a `&'static str` (made from one), else `None`.
    #[inline]
    pub fn as_static(&self) -> Option<&'static str> {
        match self.0 {
            TextRepr::Static(s) => Some(s),
            #[cfg(feature = "alloc")]
            TextRepr::Owned(_) => None,
        }
    }
}

impl core::ops::Deref for Text {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl core::hash::Hash for Text {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&'static str> for Text {
    #[inline]
    fn from(text: &'static str) -> Text {
        Text::from_static(text)
    }
}

#[cfg(feature = "alloc")]
impl From<alloc::string::String> for Text {
    fn from(text: alloc::string::String) -> Text {
        Text(TextRepr::Owned(text.into()))
    }
}

#[cfg(feature = "alloc")]
impl From<alloc::boxed::Box<str>> for Text {
    fn from(text: alloc::boxed::Box<str>) -> Text {
        Text(TextRepr::Owned(text.into()))
    }
}

#[cfg(feature = "alloc")]
impl From<alloc::sync::Arc<str>> for Text {
    fn from(text: alloc::sync::Arc<str>) -> Text {
        Text(TextRepr::Owned(text))
    }
}

#[cfg(feature = "alloc")]
impl From<alloc::borrow::Cow<'static, str>> for Text {
    fn from(text: alloc::borrow::Cow<'static, str>) -> Text {
        match text {
            alloc::borrow::Cow::Borrowed(s) => Text::from_static(s),
            alloc::borrow::Cow::Owned(s) => s.into(),
        }
    }
}
