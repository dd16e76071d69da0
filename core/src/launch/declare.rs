//! [`declare_kernels!`](crate::declare_kernels): kernels compiled from CUDA C, declared once by
//! their signature, each with a function that returns its typed [`Kernel`](super::Kernel).

/// Declares kernels compiled from CUDA C by their signature, written once, and gives each a
/// function of the same name that returns its typed [`Kernel`](crate::launch::Kernel).
///
/// ```no_run
/// use ordo_cuda_core::{DeviceBuffer, LaunchConfig, Stream};
///
/// ordo_cuda_core::declare_kernels! {
///     unsafe extern "C" {
///         /// `y = a x + y` over `n` elements (`extern "C" __global__ void saxpy(float* y,
///         /// const float* x, float a, int n)`).
///         pub fn saxpy(y: *mut f32, x: *const f32, a: f32, n: i32);
///         /// `x = a x` (`__global__ void scale(float* x, float a, int n)`, C++ linkage).
///         #[link_name = "_Z5scalePffi"]
///         pub fn scale(x: *mut f32, a: f32, n: i32);
///     }
/// }
///
/// # fn main() -> ordo_cuda_core::Result<()> {
/// let stream = Stream::new()?;
/// let s = stream.as_stream();
/// let x = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
/// let mut y = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
/// let config = LaunchConfig::for_elements(4096, 256)?;
/// // SAFETY: saxpy stays inside the n elements of `x` and `y`, which are freed on `s`, after it.
/// unsafe { saxpy().launch(s, &config, (y.as_mut_ptr(), x.as_ptr(), 2.0, 4096))? };
/// # Ok(()) }
/// ```
///
/// The block holds `fn` declarations as an `extern "C"` block does, each ending in `;`, with no
/// return type (a kernel returns `void`):
///
/// ```text
/// unsafe extern "C" {
///     $( #[attribute] )* $visibility fn $name($( $parameter: $Type ),*);
///     ...
/// }
/// ```
///
/// Each one becomes a constructor, `#[inline] $visibility fn $name() -> Kernel<($($Type,)*)>`,
/// that carries the declaration's doc comments and other attributes (`#[cfg]`, `#[doc(hidden)]`,
/// `#[allow]`, ...), and declares the host stub inside its own body, out of the caller's scope:
/// `saxpy` above expands to
///
/// ```text
/// /// `y = a x + y` over `n` elements ...
/// #[inline]
/// pub fn saxpy() -> ordo_cuda_core::launch::Kernel<(*mut f32, *const f32, f32, i32)> {
///     extern "C" {
///         fn saxpy(y: *mut f32, x: *const f32, a: f32, n: i32);
///     }
///     ordo_cuda_core::launch::Kernel::new(saxpy as unsafe extern "C" fn(*mut f32, *const f32, f32, i32))
/// }
/// ```
///
/// so `saxpy()` is the `Kernel` that `Kernel::new` makes of an `extern "C"` declaration of `saxpy`
/// cast to its function-pointer type: the same type, the same address, no work at run time. The
/// stub is the symbol of the constructor's name, as for any `extern "C"` function, unless a
/// `#[link_name = "..."]` among the attributes names another: the mangled name of a kernel with
/// C++ linkage (`nm` or `cuobjdump -symbols` shows it), or a kernel whose name is taken in Rust.
/// `link_name` goes to the stub's declaration, every other attribute to the constructor.
///
/// # Safety
/// The declarations are promises that ordo cannot check against the device code, as those of an
/// `unsafe extern` block are, and the `unsafe` before `extern "C"` says so (the Rust 2024 form; the
/// block is required to be `unsafe` in every edition):
/// - Each symbol (the name, or its `link_name`) is the host stub of a `__global__` function
///   linked into the program: the function nvcc generates for it from the `.cu` file. A function
///   that is not a registered kernel fails at launch with `cudaErrorInvalidDeviceFunction`; a
///   symbol missing from the program fails to link.
/// - Its parameters are the kernel's, in order, each with the size and alignment of the CUDA C
///   parameter and a type whose values the kernel accepts: `float*` as `*mut f32` (`const float*`
///   as `*const f32`), `int` as `i32`, `unsigned long long` as `u64`, a struct passed by value as
///   a `#[repr(C)]` struct with the same fields. A launch passes each argument by address and the
///   device reads as many bytes as the kernel's parameter has, so a wrong type is a read of the
///   wrong bytes and a wrong arity a read past the arguments.
///
/// A launch relies on the second promise ([`Kernel::launch`](crate::launch::Kernel::launch) lists
/// it first) and stays `unsafe` for what no declaration can state: what the kernel does with its
/// pointers.
///
/// The `unsafe` before `extern "C"` is a marker that the macro cannot enforce. A `macro_rules!`
/// macro matches it as a token and its expansion holds no `unsafe` of the caller's, so the block
/// compiles in a crate under `#![forbid(unsafe_code)]` and in safe code; and `__declare_kernel!`,
/// which this macro expands to and which is exported for that reason (hidden from the docs, not
/// for use), takes a declaration with no `unsafe` at all. Neither is unsound: the constructors
/// only make a typed address, as the safe [`Kernel::new`](crate::launch::Kernel::new) does, and
/// every use that relies on the declared parameters is `unsafe` and states the promise again
/// in its `# Safety`, where the caller makes it: [`Kernel::launch`](crate::launch::Kernel::launch)
/// and `launch_runtime`, `DriverKernel::launch`, a graph's `add_kernel_node` and
/// `GraphExec::set_kernel_node_args`. The keyword says to the reader what the launch's contract
/// says to the compiler.
///
/// A kernel may carry any number of attributes (doc lines count, one attribute each): runs of
/// doc lines are sorted 32 at a time, so that a kernel with a few thousand of them stays within
/// the default recursion limit (128).
#[macro_export]
macro_rules! declare_kernels {
    (unsafe extern "C" {
        $(
            $(#[$($attribute:tt)*])*
            $visibility:vis fn $name:ident($($parameter:tt: $type:ty),* $(,)?);
        )*
    }) => {
        $(
            $crate::__declare_kernel! {
                [] [] $(#[$($attribute)*])*; $visibility fn $name($($parameter: $type),*)
            }
        )*
    };
    (extern "C" { $($declarations:tt)* }) => {
        ::core::compile_error! {
            "write `unsafe extern \"C\" { .. }`: the declarations are promises ordo cannot check (see `declare_kernels!`'s `# Safety`)"
        }
    };
}

/// One kernel of [`declare_kernels!`]: `[attributes for the constructor] [link_name] attributes
/// left; signature`. The attributes are sorted from the front: `#[link_name]` to the stub, a run
/// of 32 doc lines at once, any other attribute one at a time; so the recursion is as deep as one
/// kernel's attributes are many, divided by 32 where they are doc lines (a `macro_rules!` matcher
/// cannot take the attributes in one repetition and pick `#[link_name]` out of it: the two would
/// be ambiguous to it). Not for use outside [`declare_kernels!`]: it takes the declaration
/// without the `unsafe` marker (see the macro's `# Safety`).
#[doc(hidden)]
#[macro_export]
macro_rules! __declare_kernel {
    ([$($attribute:tt)*] [$($symbol:literal)?]; $visibility:vis fn $name:ident($($parameter:tt: $type:ty),*)) => {
        $($attribute)*
        #[inline]
        $visibility fn $name() -> $crate::launch::Kernel<($($type,)*)> {
            // Inside the body, so that `$name` is the constructor outside it. Not `unsafe extern`:
            // that needs Rust 1.82 (the crate supports 1.80), and this crate's edition (2021), not
            // the caller's, is the one these tokens are read in.
            extern "C" {
                $(#[link_name = $symbol])?
                fn $name($($parameter: $type),*);
            }
            $crate::launch::Kernel::new($name as unsafe extern "C" fn($($type),*))
        }
    };
    ([$($attribute:tt)*] [] #[link_name = $symbol:literal] $($rest:tt)*) => {
        $crate::__declare_kernel! { [$($attribute)*] [$symbol] $($rest)* }
    };
    ([$($attribute:tt)*] [$first:literal] #[link_name = $symbol:literal] $($rest:tt)*) => {
        ::core::compile_error! { "a kernel has one `#[link_name]`" }
    };
    ([$($attribute:tt)*] [$($symbol:literal)?]
        #[doc = $d0:tt] #[doc = $d1:tt] #[doc = $d2:tt] #[doc = $d3:tt] #[doc = $d4:tt] #[doc = $d5:tt]
        #[doc = $d6:tt] #[doc = $d7:tt] #[doc = $d8:tt] #[doc = $d9:tt] #[doc = $d10:tt] #[doc = $d11:tt]
        #[doc = $d12:tt] #[doc = $d13:tt] #[doc = $d14:tt] #[doc = $d15:tt] #[doc = $d16:tt] #[doc = $d17:tt]
        #[doc = $d18:tt] #[doc = $d19:tt] #[doc = $d20:tt] #[doc = $d21:tt] #[doc = $d22:tt] #[doc = $d23:tt]
        #[doc = $d24:tt] #[doc = $d25:tt] #[doc = $d26:tt] #[doc = $d27:tt] #[doc = $d28:tt] #[doc = $d29:tt]
        #[doc = $d30:tt] #[doc = $d31:tt]
        $($rest:tt)*
    ) => {
        $crate::__declare_kernel! {
            [$($attribute)*
                #[doc = $d0] #[doc = $d1] #[doc = $d2] #[doc = $d3] #[doc = $d4] #[doc = $d5] #[doc = $d6]
                #[doc = $d7] #[doc = $d8] #[doc = $d9] #[doc = $d10] #[doc = $d11] #[doc = $d12] #[doc = $d13]
                #[doc = $d14] #[doc = $d15] #[doc = $d16] #[doc = $d17] #[doc = $d18] #[doc = $d19] #[doc = $d20]
                #[doc = $d21] #[doc = $d22] #[doc = $d23] #[doc = $d24] #[doc = $d25] #[doc = $d26] #[doc = $d27]
                #[doc = $d28] #[doc = $d29] #[doc = $d30] #[doc = $d31]]
            [$($symbol)?] $($rest)*
        }
    };
    ([$($attribute:tt)*] [$($symbol:literal)?] #[$($other:tt)*] $($rest:tt)*) => {
        $crate::__declare_kernel! { [$($attribute)* #[$($other)*]] [$($symbol)?] $($rest)* }
    };
}

#[cfg(test)]
mod tests {
    use crate::launch::Kernel;
    use core::ffi::c_void;

    /// Stand-ins for host stubs, defined in Rust under the symbols declared below: the tests
    /// compare addresses and types, and launch nothing.
    mod stubs {
        #[no_mangle]
        pub extern "C" fn ordo_test_declared_saxpy(_y: *mut f32, _x: *const f32, _a: f32, _n: i32) {}
        #[no_mangle]
        pub extern "C" fn ordo_test_declared_empty() {}
        #[export_name = "_Z24ordo_test_declared_scalePffi"]
        pub extern "C" fn scale(_x: *mut f32, _a: f32, _n: i32) {}
    }

    /// The form the macro replaces: an `extern "C"` block and an `as` cast.
    mod cast_form {
        extern "C" {
            pub fn ordo_test_declared_saxpy(y: *mut f32, x: *const f32, a: f32, n: i32);
            #[link_name = "_Z24ordo_test_declared_scalePffi"]
            pub fn scale(x: *mut f32, a: f32, n: i32);
        }
    }

    crate::declare_kernels! {
        unsafe extern "C" {
            /// A doc comment, carried to the constructor.
            fn ordo_test_declared_saxpy(y: *mut f32, x: *const f32, a: f32, n: i32,);
            #[link_name = "_Z24ordo_test_declared_scalePffi"]
            pub(super) fn renamed_scale(x: *mut f32, a: f32, n: i32);
            fn ordo_test_declared_empty();
            // Carried: without the `cfg`, a second `ordo_test_declared_empty` would not compile.
            #[cfg(any())]
            fn ordo_test_declared_empty(_: u8);
        }
    }

    /// 30 copies of the doc lines given, `#[link_name]` and a `#[cfg]` among them: a kernel of 300
    /// doc lines (the attributes were sorted one a recursion, and about 120 reached the default
    /// recursion limit).
    macro_rules! declare_with_many_docs {
        ($($doc:tt)*) => {
            crate::declare_kernels! {
                unsafe extern "C" {
                    $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)*
                    $($doc)* $($doc)* $($doc)* $($doc)* $($doc)*
                    #[link_name = "ordo_test_declared_saxpy"]
                    #[cfg(all())]
                    $($doc)* $($doc)* $($doc)* $($doc)* $($doc)*
                    #[allow(clippy::doc_markdown)]
                    $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)* $($doc)*
                    pub(super) fn with_many_docs(y: *mut f32, x: *const f32, a: f32, n: i32);
                }
            }
        };
    }

    declare_with_many_docs! {
        /// One of ten doc lines, each given 30 times.
        /// Two.
        /// Three.
        /// Four.
        /// Five.
        /// Six.
        /// Seven.
        /// Eight.
        /// Nine.
        /// Ten.
    }

    fn same_type<T>(_: T, _: T) {}

    #[test]
    fn the_macro_names_the_kernel_the_cast_names() {
        let cast =
            Kernel::new(cast_form::ordo_test_declared_saxpy as unsafe extern "C" fn(*mut f32, *const f32, f32, i32));
        let declared: Kernel<(*mut f32, *const f32, f32, i32)> = ordo_test_declared_saxpy();
        same_type(cast, declared);
        assert_eq!(declared.as_raw(), cast.as_raw());
        assert_eq!(declared.as_raw(), stubs::ordo_test_declared_saxpy as *const c_void);
    }

    #[test]
    fn link_name_names_another_symbol() {
        let cast = Kernel::new(cast_form::scale as unsafe extern "C" fn(*mut f32, f32, i32));
        let declared = renamed_scale();
        same_type(cast, declared);
        assert_eq!(declared.as_raw(), cast.as_raw());
        assert_eq!(declared.as_raw(), stubs::scale as *const c_void);
    }

    #[test]
    fn a_kernel_with_300_doc_lines_is_declared() {
        let declared: Kernel<(*mut f32, *const f32, f32, i32)> = with_many_docs();
        assert_eq!(declared.as_raw(), stubs::ordo_test_declared_saxpy as *const c_void, "its link_name");
    }

    #[test]
    fn a_kernel_without_parameters_takes_the_empty_tuple() {
        let declared: Kernel<()> = ordo_test_declared_empty();
        assert_eq!(declared.as_raw(), stubs::ordo_test_declared_empty as *const c_void);
    }
}
