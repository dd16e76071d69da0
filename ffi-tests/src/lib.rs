//! C and C++ programs against ordo's C ABI, compiled by `build.rs` (the header as C99 and C++17
//! with warnings as errors, and test programs whose entry points the tests call), linked with the
//! `ordo` library's exports.

/// The entry points of the test programs in `cpp/`.
pub mod programs {
    extern "C" {
        /// `cpp/status_and_arguments.cpp`: version, status names, and every documented refusal of
        /// bad arguments; with `driver_present` 0, CUDA's no-driver status through the C API.
        /// Returns the number of failed checks.
        pub fn ffi_status_and_arguments_main(driver_present: i32) -> i32;
        /// `cpp/mixed.cu`: the caller's own kernels and ordo's calls on the caller's stream, and ordo
        /// calls captured into the caller's graph. Needs a GPU. Returns the number of failed checks.
        pub fn ffi_mixed_main() -> i32;
    }
}

// Keeps the `ordo` exports linked into every binary of this crate.
pub use ordo::ffi::ordo_version;
