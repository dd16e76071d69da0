//! Runs the C++ programs compiled against include/ordo.h and linked with ordo's exports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_ffi_tests::programs;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn cpp_program_gets_documented_statuses_with_or_without_a_driver() {
    let fails = unsafe { programs::ffi_status_and_arguments_main(i32::from(driver_present())) };
    assert_eq!(fails, 0, "failed checks in cpp/status_and_arguments.cpp (printed above)");
}

#[test]
fn cpp17_program_uses_ordo_hpp_with_or_without_a_driver() {
    let fails = unsafe { programs::ffi_hpp_main(i32::from(driver_present())) };
    assert_eq!(fails, 0, "failed checks in cpp/hpp_program.cpp (printed above)");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn cpp17_program_uses_ordo_hpp_on_the_gpu() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let fails = unsafe { programs::ffi_hpp_gpu_main() };
    assert_eq!(fails, 0, "failed checks in cpp/hpp_gpu.cu (printed above)");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn cpp_program_mixes_its_kernels_and_graph_with_ordo_calls() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let fails = unsafe { programs::ffi_mixed_main() };
    assert_eq!(fails, 0, "failed checks in cpp/mixed.cu (printed above)");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn cpp_program_captures_replays_and_fails_cleanly() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let fails = unsafe { programs::ffi_captures_main() };
    assert_eq!(fails, 0, "failed checks in cpp/captures.cu (printed above)");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn cpp_program_runs_a_stencil_through_ordo_hpp() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let fails = unsafe { programs::ffi_stencil_main() };
    assert_eq!(fails, 0, "failed checks in cpp/stencil.cu (printed above)");
}
