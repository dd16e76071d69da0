//! [`cuda_call!`](crate::cuda_call): one CUDA runtime call, its status turned into a [`Result`]
//! that names the call from the call itself; and [`check_answers`], its form for calls some of
//! whose statuses are answers rather than failures.

use super::{failure, Error, Result};
use ordo_cuda_sys as sys;

/// One CUDA runtime call, its status turned into a [`Result`](crate::Result) that names the call:
/// `cuda_call!(unsafe { sys::cudaEventRecord(e, s) })` is
/// [`check(unsafe { sys::cudaEventRecord(e, s) }, "cudaEventRecord")`](crate::error::check), the
/// name taken from the call so that it cannot disagree with it. The calls whose prototype differs
/// between CUDA releases go through `sys::compat`, under CUDA's names too
/// (`cuda_call!(unsafe { sys::compat::cudaStreamGetCaptureInfo(..) })` names
/// `cudaStreamGetCaptureInfo`). The `unsafe` block stays at the call site, under its `// SAFETY:`
/// comment. `sys` is the caller's name for [`ordo_cuda_core::sys`](crate::sys).
///
/// A call some of whose statuses are answers, not failures (`cudaErrorNotReady` from a query),
/// lists them after the call: the result is then the status, success or one of them
/// ([`check_answers`](crate::error::check_answers)).
///
/// ```no_run
/// use ordo_cuda_core::{cuda_call, sys, Result};
///
/// /// Whether the work recorded by `event` has completed.
/// ///
/// /// # Safety
/// /// `event` is a live event.
/// unsafe fn done(event: sys::cudaEvent_t) -> Result<bool> {
///     // SAFETY: a live event (the caller's contract).
///     let status = cuda_call!(unsafe { sys::cudaEventQuery(event) }, answers: cudaErrorNotReady)?;
///     Ok(status == sys::cudaError::cudaSuccess)
/// }
///
/// fn main() -> Result<()> {
///     let mut version = 0;
///     // SAFETY: `version` is writable.
///     cuda_call!(unsafe { sys::cudaRuntimeGetVersion(&mut version) })?;
///     Ok(())
/// }
/// ```
#[macro_export]
macro_rules! cuda_call {
    // The block is the call site's own, `unsafe` and braces included: the macro adds no unsafe
    // code around the caller's tokens.
    ($unsafe:tt $call:tt) => {
        $crate::error::check($unsafe $call, $crate::cuda_call_name!($call))
    };
    ($unsafe:tt $call:tt, answers: $($answer:ident)|+) => {
        $crate::error::check_answers(
            $unsafe $call,
            &[$($crate::sys::cudaError::$answer),+],
            $crate::cuda_call_name!($call),
        )
    };
}

/// The name of the CUDA function a [`cuda_call!`](crate::cuda_call) block calls: `cudaX` for
/// `{ sys::cudaX(..) }` and `{ sys::compat::cudaX(..) }`.
#[doc(hidden)]
#[macro_export]
macro_rules! cuda_call_name {
    ({ sys::$f:ident($($arg:tt)*) }) => {
        stringify!($f)
    };
    ({ sys::compat::$f:ident($($arg:tt)*) }) => {
        stringify!($f)
    };
}

/// [`check`](super::check) for a call whose statuses in `answers` are answers, not failures
/// (`cudaErrorNotReady`: "not yet"): `Ok` with the status for success and for each of them, the
/// error naming `call` for any other. Inlined: a compare a status on the success path.
#[inline(always)]
pub fn check_answers(
    code: sys::cudaError_t,
    answers: &[sys::cudaError_t],
    call: &'static str,
) -> Result<sys::cudaError_t> {
    if code == sys::cudaError::cudaSuccess || answers.contains(&code) {
        Ok(code)
    } else {
        Err(Error::Cuda(failure(code, call)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_statuses_and_the_rest_errors_naming_the_call() {
        let not_ready = sys::cudaError::cudaErrorNotReady;
        assert_eq!(check_answers(sys::cudaError::cudaSuccess, &[not_ready], "q"), Ok(sys::cudaError::cudaSuccess));
        assert_eq!(check_answers(not_ready, &[not_ready], "q"), Ok(not_ready));
        let e = check_answers(sys::cudaError::cudaErrorInvalidValue, &[not_ready], "q").unwrap_err();
        assert_eq!((e.cuda_code(), e.call()), (Some(sys::cudaError::cudaErrorInvalidValue), "q"));
        assert_eq!(check_answers(not_ready, &[], "q").unwrap_err().cuda_code(), Some(not_ready));
    }

    /// The macro names the call from the call, in both forms (`cudaDriverGetVersion` answers
    /// without a driver; `cudaSetDevice(-1)` is refused with or without one).
    #[test]
    fn the_macro_names_the_call() {
        let mut version = -1;
        // SAFETY: `version` is writable.
        assert_eq!(crate::cuda_call!(unsafe { sys::cudaDriverGetVersion(&mut version) }), Ok(()));
        assert!(version >= 0);
        // SAFETY: no pointer; an invalid ordinal is refused.
        let e = crate::cuda_call!(unsafe { sys::cudaSetDevice(-1) }).unwrap_err();
        assert_eq!(e.call(), "cudaSetDevice");
        let refused = e.cuda_code().unwrap_or(sys::cudaError::cudaSuccess);
        // SAFETY: as above.
        let answered = crate::cuda_call!(unsafe { sys::cudaSetDevice(-1) }, answers: cudaErrorInvalidDevice | cudaErrorNoDevice | cudaErrorInsufficientDriver);
        assert!(
            answered == Ok(refused) || answered.as_ref().is_err_and(|e| e.call() == "cudaSetDevice"),
            "{answered:?}"
        );
        // SAFETY: `version` is writable.
        let answered =
            crate::cuda_call!(unsafe { sys::cudaDriverGetVersion(&mut version) }, answers: cudaErrorNotReady);
        assert_eq!(answered, Ok(sys::cudaError::cudaSuccess));
        let _ = crate::error::take_last_error();
    }
}
