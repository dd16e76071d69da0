//! `Kernel::new` takes a function pointer, whose type states the kernel's parameters, not the
//! function item an `extern "C"` block declares: the error names both ways that compile.
use ordo_cuda_core::Kernel;

extern "C" {
    fn add_one(x: *mut f32, n: i32);
}

fn main() {
    let _kernel: Kernel<(*mut f32, i32)> = Kernel::new(add_one);
}
