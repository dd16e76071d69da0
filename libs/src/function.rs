//! One entry of a library's function table: a [`Function`] holds the address `dlsym` gave, as its
//! C signature, beside the function's C name; [`call!`] makes one call through an entry and
//! returns the library's status with that name ([`Returned`]). So an error names the function from
//! the table entry that loaded it, never from a name typed again at the call (as
//! [`ordo_cuda_core::cuda_call!`] takes it from the runtime call).

use crate::dl::Library;
use core::ffi::{c_int, c_void, CStr};
use ordo_cuda_core::Result;

/// A function of a library loaded at run time: its address as `F` (its C signature) and its C name.
#[derive(Clone, Copy)]
pub(crate) struct Function<F> {
    pub(crate) f: F,
    pub(crate) name: &'static str,
}

impl<F: Copy> Function<F> {
    /// The function `name` of `lib`; a missing one is `lib`'s error.
    ///
    /// # Safety
    /// `F` is the function's C signature.
    pub(crate) unsafe fn load(lib: &Library, name: &'static CStr) -> Result<Function<F>> {
        // SAFETY: the caller's contract.
        Ok(Function { f: unsafe { cast(lib.symbol(name)?) }, name: c_name(name) })
    }

    /// The function `name` of `lib`, `None` where `lib` lacks it.
    ///
    /// # Safety
    /// As [`load`](Self::load).
    #[cfg(feature = "nccl")]
    pub(crate) unsafe fn find(lib: &Library, name: &'static CStr) -> Option<Function<F>> {
        // SAFETY: the caller's contract.
        unsafe { Function::load(lib, name) }.ok()
    }
}

/// A C function's name, as the errors carry it.
pub(crate) fn c_name(name: &'static CStr) -> &'static str {
    name.to_str().unwrap_or("a function with a name that is not UTF-8")
}

/// Casts the address of a symbol to a function pointer type `F` (of pointer size).
///
/// # Safety
/// `F` is the symbol's C signature.
unsafe fn cast<F: Copy>(p: *mut c_void) -> F {
    const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut c_void>()) };
    // SAFETY: sizes are equal (checked at compile time); the signature is the caller's promise.
    unsafe { core::mem::transmute_copy::<*mut c_void, F>(&p) }
}

/// What one call through a [`Function`] returned: the library's status (NCCL's `ncclResult_t`,
/// NVRTC's `nvrtcResult`) and the function's name, for the error.
#[must_use = "a library's status says whether the call failed"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Returned {
    pub(crate) status: c_int,
    pub(crate) call: &'static str,
}

/// One call through a library's function table, named by its entry: `call!(unsafe {
/// api.count(comm, &mut v) })` (`api` a binding of the table, `count` one of its [`Function`]s)
/// or `call!(unsafe { send(buf, n, ..) })` (`send` a [`Function`] in a binding) is the
/// [`Returned`] status of that call with the function's C name. The `unsafe` block stays at the
/// call site, under its `// SAFETY:` comment.
macro_rules! call {
    ($unsafe:tt { $api:ident . $f:ident ( $($arg:expr),* $(,)? ) }) => {{
        let function = &$api.$f;
        $crate::function::Returned { status: $unsafe { (function.f)($($arg),*) }, call: function.name }
    }};
    ($unsafe:tt { $f:ident ( $($arg:expr),* $(,)? ) }) => {{
        $crate::function::Returned { status: $unsafe { ($f.f)($($arg),*) }, call: $f.name }
    }};
}
pub(crate) use call;

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn seven(x: c_int) -> c_int {
        x + 7
    }

    struct Table {
        seven: Function<unsafe extern "C" fn(c_int) -> c_int>,
    }

    #[test]
    fn a_call_is_named_by_its_entry() {
        let api = Table { seven: Function { f: seven as unsafe extern "C" fn(c_int) -> c_int, name: "seven" } };
        // SAFETY: a Rust function of that signature.
        let r = call!(unsafe { api.seven(1) });
        assert_eq!(r, Returned { status: 8, call: "seven" });
        let f = api.seven;
        // SAFETY: as above.
        assert_eq!(call!(unsafe { f(-7) }), Returned { status: 0, call: "seven" });
        assert_eq!(c_name(c"ncclAllReduce"), "ncclAllReduce");
    }
}
