//! A type that names a kernel for `Kernel::new` promises the kernel's parameters: implementing
//! `KernelFn` takes an `unsafe impl` (a safe impl could name any address with any argument tuple,
//! and a launch would hand the device arguments of the wrong sizes).
use core::ffi::c_void;
use ordo_cuda_core::launch::{Kernel, KernelFn};

#[derive(Clone, Copy)]
struct Pretend;

impl KernelFn for Pretend {
    type Args = (u8,);
    fn addr(self) -> *const c_void {
        0x1000 as *const c_void
    }
}

fn main() {
    let _kernel = Kernel::new(Pretend);
}
