//! `gemv_normalize` with cuBLAS's `cublasSgemv` (feature `cublas`).
//!
//! cuBLAS is loaded at run time with `dlopen` (`libcublas.so.13`, `.12`, then `libcublas.so`, or the
//! file `ORDO_CUBLAS` names), so building needs no cuBLAS and a program without the feature never
//! touches it. The handful of functions used have had the same C signatures since CUDA 10.
//!
//! Stream-correct: the handle's stream is set to the caller's stream on every call, since a cuBLAS
//! handle remembers the last stream it was given and another user of the handle may have changed it.

use crate::{count_i32, kernel, BLOCK};
use core::ffi::{c_char, c_int, c_void, CStr};
use ordo_core::error::LibraryError;
use ordo_core::launch::LaunchConfig;
use ordo_core::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef, UsageKind};

type Handle = *mut c_void;
type Status = c_int;
const CUBLAS_OP_T: c_int = 1;

type CreateFn = unsafe extern "C" fn(*mut Handle) -> Status;
type DestroyFn = unsafe extern "C" fn(Handle) -> Status;
type SetStreamFn = unsafe extern "C" fn(Handle, ordo_core::sys::cudaStream_t) -> Status;
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

/// A cuBLAS handle, with the library loaded at run time. Destroyed on drop.
pub struct Cublas {
    lib: *mut c_void,
    api: Api,
    handle: Handle,
}

// SAFETY: a cuBLAS handle may move between threads; `&Cublas` calls set the stream and enqueue,
// which cuBLAS documents as not thread-safe on one handle, so `Cublas` is Send but not Sync.
unsafe impl Send for Cublas {}

fn lib_error(call: &'static str, status: Status) -> Error {
    Error::Library(LibraryError { library: "cuBLAS", call, status })
}

fn not_found(what: &'static str) -> Error {
    Error::usage(UsageKind::NotSupported, "Cublas::new", what)
}

impl Cublas {
    /// Loads cuBLAS and creates a handle (`cublasCreate_v2`) on the current device.
    pub fn new() -> Result<Cublas> {
        let explicit = std::env::var_os("ORDO_CUBLAS").and_then(|p| std::ffi::CString::new(p.into_encoded_bytes()).ok());
        let mut names: Vec<&CStr> = Vec::new();
        if let Some(p) = explicit.as_deref() {
            names.push(p);
        }
        names.extend([c"libcublas.so.13", c"libcublas.so.12", c"libcublas.so"]);
        let lib = names
            .iter()
            // SAFETY: NUL-terminated names; dlopen runs the library's initialisers, as any load does.
            .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
            .find(|h| !h.is_null())
            .ok_or(not_found("libcublas.so.13/.12 not found by dlopen (set ORDO_CUBLAS to its path)"))?;
        // SAFETY: `lib` is a loaded library; each symbol is cast to its documented C signature.
        let api = unsafe {
            let sym = |name: &CStr| -> Result<*mut c_void> {
                let p = libc::dlsym(lib, name.as_ptr() as *const c_char);
                if p.is_null() {
                    Err(not_found("a cuBLAS symbol is missing from the loaded library"))
                } else {
                    Ok(p)
                }
            };
            let loaded = (|| -> Result<Api> {
                Ok(Api {
                    create: core::mem::transmute::<*mut c_void, CreateFn>(sym(c"cublasCreate_v2")?),
                    destroy: core::mem::transmute::<*mut c_void, DestroyFn>(sym(c"cublasDestroy_v2")?),
                    set_stream: core::mem::transmute::<*mut c_void, SetStreamFn>(sym(c"cublasSetStream_v2")?),
                    sgemv: core::mem::transmute::<*mut c_void, SgemvFn>(sym(c"cublasSgemv_v2")?),
                })
            })();
            match loaded {
                Ok(api) => api,
                Err(e) => {
                    libc::dlclose(lib);
                    return Err(e);
                }
            }
        };
        let mut handle: Handle = core::ptr::null_mut();
        // SAFETY: `handle` is writable.
        let status = unsafe { (api.create)(&mut handle) };
        if status != 0 {
            // SAFETY: nothing from the library is in use.
            unsafe { libc::dlclose(lib) };
            return Err(lib_error("cublasCreate_v2", status));
        }
        Ok(Cublas { lib, api, handle })
    }

    /// `y = A x / |A x|` for row-major `a` (`rows x cols`) on `stream`: `cublasSgemv` (after
    /// `cublasSetStream` to `stream`), then ordo's sum-of-squares and scaling kernels, with the
    /// temporary from `cudaMallocAsync` on `stream`. Capturable into a graph.
    ///
    /// # Safety
    /// `a`, `x` and `y` stay allocated until the work completes (see the [crate docs](crate#safety)).
    pub unsafe fn gemv_normalize(
        &mut self,
        stream: StreamRef<'_>,
        a: DeviceSlice<'_, f32>,
        x: DeviceSlice<'_, f32>,
        y: DeviceSliceMut<'_, f32>,
        rows: usize,
        cols: usize,
    ) -> Result<()> {
        const CALL: &str = "Cublas::gemv_normalize";
        let cells = rows.checked_mul(cols).ok_or(Error::invalid(CALL, "rows * cols overflows"))?;
        if a.len() != cells || x.len() != cols || y.len() != rows {
            return Err(Error::invalid(CALL, "lengths must be a: rows*cols, x: cols, y: rows"));
        }
        let (rows_i, cols_i) = (count_i32(rows, CALL)?, count_i32(cols, CALL)?);
        // SAFETY: a live handle and stream.
        let status = unsafe { (self.api.set_stream)(self.handle, stream.as_raw()) };
        if status != 0 {
            return Err(lib_error("cublasSetStream_v2", status));
        }
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major A (rows x cols) is column-major A^T (cols x rows): y = (A^T)^T x.
        // SAFETY: sizes checked; host scalars are read during the call.
        let status = unsafe {
            (self.api.sgemv)(self.handle, CUBLAS_OP_T, cols_i, rows_i, &alpha, a.as_ptr(), cols_i, x.as_ptr(), 1, &beta, y.as_mut_ptr(), 1)
        };
        if status != 0 {
            return Err(lib_error("cublasSgemv_v2", status));
        }
        let mut sum_sq = DeviceBuffer::<f32>::zeroed_async(1, stream)?;
        let sum_config = LaunchConfig::new(rows.div_ceil(BLOCK as usize).min(1024) as u32, BLOCK);
        // SAFETY: as in `crate::gemv_normalize`.
        unsafe {
            kernel::sum_squares().launch(stream, &sum_config, (y.as_mut_ptr() as *const f32, sum_sq.as_mut_ptr(), rows_i))?;
            kernel::normalize().launch(stream, &LaunchConfig::for_elements(rows, BLOCK)?, (y.as_mut_ptr(), sum_sq.as_ptr(), rows_i))?;
        }
        sum_sq.free_async()
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: our handle and library; the handle is destroyed before the library is closed.
        unsafe {
            (self.api.destroy)(self.handle);
            libc::dlclose(self.lib);
        }
    }
}
