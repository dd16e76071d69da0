//! A cuBLAS handle (feature `cublas`), bound to the caller's stream on every call.
//!
//! cuBLAS is loaded at run time with `dlopen` (`libcublas.so.13`, `.12`, then `libcublas.so`, or the
//! file `ORDO_CUBLAS` names), so building needs no cuBLAS and a program without the feature never
//! touches it. The handful of functions used have had the same C signatures since CUDA 10.
//!
//! Stream-correct: the handle's stream is set to the caller's stream on every call, since a cuBLAS
//! handle remembers the last stream it was given and another user of the handle may have changed it.

use crate::dl::Library;
use core::ffi::{c_int, c_void};
use ordo_cuda_core::error::LibraryError;
use ordo_cuda_core::{Error, Result, StreamRef};

type Handle = *mut c_void;
type Status = c_int;

type CreateFn = unsafe extern "C" fn(*mut Handle) -> Status;
type DestroyFn = unsafe extern "C" fn(Handle) -> Status;
type SetStreamFn = unsafe extern "C" fn(Handle, ordo_cuda_core::sys::cudaStream_t) -> Status;
type SgemvFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    *const f32,
    *mut f32,
    c_int,
) -> Status;

struct Api {
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    sgemv: SgemvFn,
}

/// A cuBLAS handle, with the library loaded at run time.
///
/// # Drop
/// Dropping it calls `cublasDestroy_v2`, which **synchronises the device**: cuBLAS documents that
/// releasing the handle's resources implicitly calls `cudaDeviceSynchronize()`, so the drop waits
/// for all work of every stream on the device. So drop a `Cublas` outside hot paths and never inside a stream capture
/// (a synchronise there fails and invalidates the capture); keep one for the life of the work
/// instead. A failure of `cublasDestroy_v2` is kept for
/// [`take_drop_errors`](ordo_cuda_core::error::take_drop_errors) as an [`Error::Library`].
pub struct Cublas {
    api: Api,
    handle: Handle,
    // Dropped after the handle (fields drop in order): the library stays loaded until then.
    _lib: Library,
}

// SAFETY: a cuBLAS handle may move between threads; calls take `&mut self`, since cuBLAS does not
// allow two threads on one handle at once, so `Cublas` is Send but not Sync.
unsafe impl Send for Cublas {}

fn lib_error(call: &'static str, status: Status) -> Error {
    Error::Library(LibraryError::new("cuBLAS", call, status))
}

impl Cublas {
    /// Loads cuBLAS and creates a handle (`cublasCreate_v2`) on the current device.
    pub fn new() -> Result<Cublas> {
        let lib = Library::open(
            "ORDO_CUBLAS",
            &[c"libcublas.so.13", c"libcublas.so.12", c"libcublas.so"],
            "Cublas::new",
            "libcublas.so.13/.12 not found by dlopen (set ORDO_CUBLAS to its path)",
        )?;
        // SAFETY: each symbol is cast to its documented C signature.
        let api = unsafe {
            Api {
                create: core::mem::transmute::<*mut c_void, CreateFn>(lib.symbol(c"cublasCreate_v2")?),
                destroy: core::mem::transmute::<*mut c_void, DestroyFn>(lib.symbol(c"cublasDestroy_v2")?),
                set_stream: core::mem::transmute::<*mut c_void, SetStreamFn>(lib.symbol(c"cublasSetStream_v2")?),
                sgemv: core::mem::transmute::<*mut c_void, SgemvFn>(lib.symbol(c"cublasSgemv_v2")?),
            }
        };
        let mut handle: Handle = core::ptr::null_mut();
        // SAFETY: `handle` is writable.
        let status = unsafe { (api.create)(&mut handle) };
        if status != 0 {
            return Err(lib_error("cublasCreate_v2", status));
        }
        Ok(Cublas { api, handle, _lib: lib })
    }

    /// `y = alpha op(A) x + beta y` on `stream` (`cublasSetStream_v2` to `stream`, then
    /// `cublasSgemv_v2`), A column-major `m x n` with leading dimension `lda`; `transpose` picks
    /// `op(A) = A^T`. Scalars are read on the host during the call. Capturable into a graph.
    ///
    /// # Safety
    /// - `a` holds `lda * n` floats, `x` the vector `op(A)` takes (`n`, or `m` transposed) and `y`
    ///   the one it gives, in device memory of the stream's device, with `lda >= max(1, m)`;
    /// - they stay allocated until the work completes on `stream` (at every replay, if captured).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sgemv(
        &mut self,
        stream: StreamRef<'_>,
        transpose: bool,
        m: c_int,
        n: c_int,
        alpha: f32,
        a: *const f32,
        lda: c_int,
        x: *const f32,
        beta: f32,
        y: *mut f32,
    ) -> Result<()> {
        // SAFETY: a live handle and stream.
        let status = unsafe { (self.api.set_stream)(self.handle, stream.as_raw()) };
        if status != 0 {
            return Err(lib_error("cublasSetStream_v2", status));
        }
        let op = c_int::from(transpose);
        // SAFETY: the caller's contract; the scalars are read during the call.
        let status = unsafe { (self.api.sgemv)(self.handle, op, m, n, &alpha, a, lda, x, 1, &beta, y, 1) };
        if status != 0 {
            return Err(lib_error("cublasSgemv_v2", status));
        }
        Ok(())
    }
}

impl Drop for Cublas {
    /// Synchronises the device (see [`Cublas`]).
    fn drop(&mut self) {
        // SAFETY: our handle; the library is closed after this (field order).
        let status = unsafe { (self.api.destroy)(self.handle) };
        if status != 0 {
            ordo_cuda_core::error::record_drop_error_value(lib_error("cublasDestroy_v2", status));
        }
    }
}
