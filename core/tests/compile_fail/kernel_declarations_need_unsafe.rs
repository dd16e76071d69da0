//! `declare_kernels!` states signatures that ordo cannot check against the device code, so its
//! block is an `unsafe extern "C"` block, as Rust 2024 requires of `extern` blocks.
ordo_cuda_core::declare_kernels! {
    extern "C" {
        pub fn add_one(x: *mut f32, n: i32);
    }
}

fn main() {}
