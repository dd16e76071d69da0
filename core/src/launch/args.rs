//! Kernel arguments: a tuple of `Copy` values passed by address from a stack array
//! ([`KernelArgs`]), and the function-pointer types that name a kernel's host stub with its
//! argument tuple ([`KernelFn`]). No heap allocation, whatever the arity (up to 12).

use core::ffi::c_void;

/// A tuple of kernel arguments, passed by address to the launch from a stack array.
///
/// # Safety
/// - `arg_ptrs` returns one pointer to each argument, in order.
/// - Each pointer points into `self`, so it is valid while `self` is not moved or dropped.
pub unsafe trait KernelArgs {
    /// The array of argument addresses (`[*mut c_void; N]`).
    type Ptrs: AsMut<[*mut c_void]>;
    /// The address of each argument, in order.
    fn arg_ptrs(&mut self) -> Self::Ptrs;
}

/// A function pointer type that can name a kernel's host stub, and its argument tuple.
///
/// # Safety
/// [`addr`](Self::addr) returns the host stub (or `cudaKernel_t`) of a kernel whose parameters
/// are exactly [`Args`](Self::Args), in order and in size: a launch passes `Args` by address, and
/// the device reads what the kernel's parameters say. ordo implements it for `unsafe extern "C"
/// fn(A, B, ...)`, whose declaration states the parameters.
///
/// A function item (`Kernel::new(saxpy)`) is not one: its type names that one function, not its
/// parameters. [`declare_kernels!`](crate::declare_kernels) gives each kernel a typed constructor;
/// otherwise cast the item to its function-pointer type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not name a kernel with its parameter types",
    label = "not an `unsafe extern \"C\" fn(..)` pointer of at most 12 parameters",
    note = "declare the kernel with `ordo_cuda::declare_kernels! {{ unsafe extern \"C\" {{ fn saxpy(..); }} }}` (`ordo_cuda_core::declare_kernels!`) and call its typed constructor, `saxpy()`",
    note = "or cast the host stub to its function-pointer type: `Kernel::new(saxpy as unsafe extern \"C\" fn(*mut f32, i32))`"
)]
pub unsafe trait KernelFn: Copy {
    /// The argument tuple.
    type Args: KernelArgs;
    /// The stub's address.
    fn addr(self) -> *const c_void;
}

macro_rules! kernel_args {
    ($n:literal; $($t:ident . $i:tt),*) => {
        // SAFETY: one address a field, in order, each into `self`.
        unsafe impl<$($t: Copy),*> KernelArgs for ($($t,)*) {
            type Ptrs = [*mut c_void; $n];
            #[inline(always)]
            #[allow(clippy::unused_unit)]
            fn arg_ptrs(&mut self) -> [*mut c_void; $n] {
                [$((&mut self.$i as *mut $t).cast::<c_void>()),*]
            }
        }

        // SAFETY: the parameters are the function type's, which the `extern "C"` declaration of
        // the kernel's stub states (that declaration is the caller's to get right, as every
        // launch's `# Safety` says).
        unsafe impl<$($t: Copy),*> KernelFn for unsafe extern "C" fn($($t),*) {
            type Args = ($($t,)*);
            #[inline(always)]
            fn addr(self) -> *const c_void {
                self as *const c_void
            }
        }
    };
}

kernel_args!(0;);
kernel_args!(1; A.0);
kernel_args!(2; A.0, B.1);
kernel_args!(3; A.0, B.1, C.2);
kernel_args!(4; A.0, B.1, C.2, D.3);
kernel_args!(5; A.0, B.1, C.2, D.3, E.4);
kernel_args!(6; A.0, B.1, C.2, D.3, E.4, F.5);
kernel_args!(7; A.0, B.1, C.2, D.3, E.4, F.5, G.6);
kernel_args!(8; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
kernel_args!(9; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
kernel_args!(10; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
kernel_args!(11; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
kernel_args!(12; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);
