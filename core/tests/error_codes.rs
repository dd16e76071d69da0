//! CUDA's error codes as ordo classifies them, against the headers the build used, and the
//! words an error carries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error::{is_sticky_code, CudaError};
use ordo_cuda_core::*;

/// `(value, name, documented as leaving the process in an inconsistent state or needing a restart)` for each
/// `cudaError` value in the header the build used.
fn header_errors() -> Vec<(u32, String, bool)> {
    let text = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
    let start = text.find("enum __device_builtin__ cudaError").unwrap();
    let body = &text[start..];
    let body = &body[..body.find("};").unwrap()];
    let mut out = Vec::new();
    let mut doc = String::new();
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("/**") {
            doc.clear();
        }
        doc.push_str(t);
        doc.push(' ');
        if let Some(rest) = t.strip_prefix("cudaError") {
            let mut parts = rest.split('=');
            let name = format!("cudaError{}", parts.next().unwrap().trim());
            let value: u32 = parts.next().unwrap().trim().trim_end_matches(',').parse().unwrap();
            let doc_text = doc.split_whitespace().collect::<Vec<_>>().join(" ");
            let sticky = doc_text.contains("inconsistent state") || doc_text.contains("terminated and relaunched");
            out.push((value, name, sticky));
            doc.clear();
        }
    }
    out
}

#[test]
fn error_names_match_the_header() {
    let errors = header_errors();
    assert!(errors.len() > 100, "parsed {} values", errors.len());
    for (value, name, _) in &errors {
        let e = CudaError::new(sys::cudaError(*value), "test");
        assert_eq!(e.name().to_str().unwrap(), name, "value {value}");
        assert!(!e.description().to_bytes().is_empty());
    }
}

#[test]
fn sticky_classification_matches_the_header_documentation() {
    for (value, name, sticky) in header_errors() {
        assert_eq!(is_sticky_code(sys::cudaError(value)), sticky, "{name} = {value}");
    }
    let e = Error::from(CudaError::new(sys::cudaError::cudaErrorIllegalAddress, "cudaStreamSynchronize"));
    assert!(e.is_sticky());
    let text = e.to_string();
    assert!(text.contains("cudaStreamSynchronize failed: cudaErrorIllegalAddress (700)"), "{text}");
    assert!(text.contains("sticky"), "{text}");
    let e = CudaError::new(sys::cudaError::cudaErrorInvalidConfiguration, "cudaLaunchKernelExC");
    assert!(!e.is_sticky());
    assert!(!e.to_string().contains("sticky"));
}

#[test]
fn an_error_takes_static_words_or_words_made_at_run_time() {
    use ordo_cuda_core::error::{Text, UsageError};
    // Static words, also in a constant.
    const REFUSED: Error = Error::usage_static(UsageKind::InvalidArgument, "frame", "no rows");
    assert_eq!(REFUSED.to_string(), "frame: InvalidArgument: no rows");
    assert_eq!(Error::invalid("frame", "no rows"), REFUSED);
    // Words made at run time (a caller's own checks), kept whole and shared by clones.
    let (rows, max) = (4097, 4096);
    let e = Error::invalid("frame", format!("{rows} rows, at most {max}"));
    assert_eq!(e.to_string(), "frame: InvalidArgument: 4097 rows, at most 4096");
    let copy = e.clone();
    let (Error::Usage(a), Error::Usage(b)) = (&e, &copy) else { panic!("{e:?}") };
    assert!(core::ptr::eq(a.what.as_str(), b.what.as_str()), "clones share the text");
    assert_eq!(a.what, "4097 rows, at most 4096");
    assert_eq!(a.what.as_static(), None);
    assert!(matches!(REFUSED, Error::Usage(UsageError { ref what, .. }) if what.as_static() == Some("no rows")));
    // Every owned form a caller may hold.
    let boxed: Box<str> = "boxed".into();
    let shared: std::sync::Arc<str> = "shared".into();
    let cow: std::borrow::Cow<'static, str> = std::borrow::Cow::Owned("cow".to_owned());
    for (text, words) in [(Text::from(boxed), "boxed"), (Text::from(shared), "shared"), (Text::from(cow), "cow")] {
        assert_eq!(
            Error::usage(UsageKind::NotSupported, "x", text.clone()).to_string(),
            format!("x: NotSupported: {words}")
        );
        assert_eq!(format!("{text:?}"), format!("{words:?}"));
    }
    // No size is paid for it: 64 bytes, as with static texts only.
    assert!(core::mem::size_of::<Error>() <= 64);
}
