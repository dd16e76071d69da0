//! A cuBLAS handle (feature `cublas`), bound to the caller's stream on every call.
//!
//! cuBLAS is loaded at run time with `dlopen` (`libcublas.so.13`, `.12`, then `libcublas.so`, or the
//! file `ORDO_CUBLAS` names), so building needs no cuBLAS and a program without the feature never
//! touches it. The handful of functions used have had the same C signatures since CUDA 10.
//!
//! Stream-correct: the handle's stream is set to the caller's stream on every call, since a cuBLAS
//! handle remembers the last stream it was given and another user of the handle may have changed it;
//! a workspace given with [`Cublas::set_workspace`] is set again after it, since `cublasSetStream`
//! puts the handle back on cuBLAS's default workspace (as PyTorch does on every call).
//!
//! GEMMs with mixed types ([`Cublas::gemm_ex`], [`Cublas::gemm_strided_batched_ex`]) take a
//! [`GemmEx`] that names each `cublasGemmEx` argument; their scalars are `f32`, so the compute
//! types are the fp32 ones ([`ComputeType`]). PyTorch's fp16 GEMM is `CUBLAS_COMPUTE_32F` under
//! [`MathMode::Default`] (tensor cores), fp16 operands and output.

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

type GemmExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;
type GemmStridedBatchedExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
) -> Status;
type SetMathModeFn = unsafe extern "C" fn(Handle, c_int) -> Status;
type SetWorkspaceFn = unsafe extern "C" fn(Handle, *mut c_void, usize) -> Status;
type GetVersionFn = unsafe extern "C" fn(Handle, *mut c_int) -> Status;

struct Api {
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    sgemv: SgemvFn,
    gemm_ex: GemmExFn,
    gemm_strided_batched_ex: GemmStridedBatchedExFn,
    set_math_mode: SetMathModeFn,
    set_workspace: SetWorkspaceFn,
    get_version: GetVersionFn,
}

/// `cublasOperation_t`: what a GEMM does with an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CUBLAS_OP_N`: as stored.
    None,
    /// `CUBLAS_OP_T`: transposed.
    Transpose,
}

impl Operation {
    fn raw(self) -> c_int {
        match self {
            Operation::None => 0,
            Operation::Transpose => 1,
        }
    }
}

/// `cudaDataType` of a GEMM operand: the real types `cublasGemmEx` takes with an fp32 compute type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// `CUDA_R_32F`.
    F32,
    /// `CUDA_R_16F` (IEEE half).
    F16,
    /// `CUDA_R_16BF` (bfloat16).
    Bf16,
}

impl DataType {
    fn raw(self) -> c_int {
        match self {
            DataType::F32 => 0,
            DataType::F16 => 2,
            DataType::Bf16 => 14,
        }
    }

    /// Bytes an element.
    pub fn size(self) -> usize {
        match self {
            DataType::F32 => 4,
            DataType::F16 | DataType::Bf16 => 2,
        }
    }
}

/// `cublasComputeType_t`, the ones whose scalars (`alpha`, `beta`) are `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeType {
    /// `CUBLAS_COMPUTE_32F`: fp32 accumulation; fp16 and bf16 inputs on tensor cores.
    F32,
    /// `CUBLAS_COMPUTE_32F_PEDANTIC`: fp32 throughout, no tensor-core shortcuts.
    F32Pedantic,
    /// `CUBLAS_COMPUTE_32F_FAST_16F`: fp32 inputs may be rounded to fp16.
    F32Fast16F,
    /// `CUBLAS_COMPUTE_32F_FAST_16BF`: fp32 inputs may be rounded to bf16.
    F32Fast16Bf,
    /// `CUBLAS_COMPUTE_32F_FAST_TF32`: fp32 inputs may be rounded to TF32.
    F32FastTf32,
}

impl ComputeType {
    fn raw(self) -> c_int {
        match self {
            ComputeType::F32 => 68,
            ComputeType::F32Pedantic => 69,
            ComputeType::F32Fast16F => 74,
            ComputeType::F32Fast16Bf => 75,
            ComputeType::F32FastTf32 => 77,
        }
    }
}

/// `cublasGemmAlgo_t`: cuBLAS's heuristics pick the kernel for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmAlgo {
    /// `CUBLAS_GEMM_DEFAULT`.
    Default,
    /// `CUBLAS_GEMM_DEFAULT_TENSOR_OP` (what PyTorch passes; the same as `Default` since CUDA 11).
    DefaultTensorOp,
}

impl GemmAlgo {
    fn raw(self) -> c_int {
        match self {
            GemmAlgo::Default => -1,
            GemmAlgo::DefaultTensorOp => 99,
        }
    }
}

/// `cublasMath_t`, without its flag (see [`Cublas::set_math_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathMode {
    /// `CUBLAS_DEFAULT_MATH`: tensor cores where the compute type allows them (PyTorch's mode for
    /// its fp16 and bf16 GEMMs).
    Default,
    /// `CUBLAS_PEDANTIC_MATH`: the compute type's exact arithmetic.
    Pedantic,
    /// `CUBLAS_TF32_TENSOR_OP_MATH`: fp32 routines may use TF32 tensor cores.
    Tf32TensorOp,
}

/// One GEMM operand: its device address, element type and leading dimension (column-major, as
/// cuBLAS reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand<P> {
    /// The first element.
    pub ptr: P,
    /// The element type.
    pub ty: DataType,
    /// The leading dimension, in elements.
    pub ld: c_int,
}

/// The arguments of `cublasGemmEx`: `C = alpha op(A) op(B) + beta C`, `op(A)` `m x k`, `op(B)`
/// `k x n`, `C` `m x n`, all column-major. Row-major `y[n][m] = x[n][k] W[m][k]^T` (a linear
/// layer) is `transa: Transpose, transb: None` with `a` = W (`ld` k), `b` = x (`ld` k), `c` = y
/// (`ld` m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmEx {
    /// What is done with A.
    pub transa: Operation,
    /// What is done with B.
    pub transb: Operation,
    /// Rows of `op(A)` and C.
    pub m: c_int,
    /// Columns of `op(B)` and C.
    pub n: c_int,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: c_int,
    /// The product's factor.
    pub alpha: f32,
    /// A.
    pub a: Operand<*const c_void>,
    /// B.
    pub b: Operand<*const c_void>,
    /// C's factor (1: accumulate into C, such as a residual).
    pub beta: f32,
    /// C, read when `beta` is not zero, written.
    pub c: Operand<*mut c_void>,
    /// The compute type.
    pub compute: ComputeType,
    /// The algorithm.
    pub algo: GemmAlgo,
}

/// The batch of `cublasGemmStridedBatchedEx`: `count` GEMMs, the i-th operands `i * stride`
/// elements after the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StridedBatch {
    /// Elements between consecutive A.
    pub stride_a: i64,
    /// Elements between consecutive B.
    pub stride_b: i64,
    /// Elements between consecutive C.
    pub stride_c: i64,
    /// GEMMs.
    pub count: c_int,
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
    /// The workspace [`Cublas::set_workspace`] gave (address, bytes), set again after each stream.
    workspace: Option<(*mut c_void, usize)>,
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
                gemm_ex: core::mem::transmute::<*mut c_void, GemmExFn>(lib.symbol(c"cublasGemmEx")?),
                gemm_strided_batched_ex: core::mem::transmute::<*mut c_void, GemmStridedBatchedExFn>(
                    lib.symbol(c"cublasGemmStridedBatchedEx")?,
                ),
                set_math_mode: core::mem::transmute::<*mut c_void, SetMathModeFn>(lib.symbol(c"cublasSetMathMode")?),
                set_workspace: core::mem::transmute::<*mut c_void, SetWorkspaceFn>(
                    lib.symbol(c"cublasSetWorkspace_v2")?,
                ),
                get_version: core::mem::transmute::<*mut c_void, GetVersionFn>(lib.symbol(c"cublasGetVersion_v2")?),
            }
        };
        let mut handle: Handle = core::ptr::null_mut();
        // SAFETY: `handle` is writable.
        let status = unsafe { (api.create)(&mut handle) };
        if status != 0 {
            return Err(lib_error("cublasCreate_v2", status));
        }
        Ok(Cublas { api, handle, workspace: None, _lib: lib })
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
        self.bind(stream)?;
        let op = c_int::from(transpose);
        // SAFETY: the caller's contract; the scalars are read during the call.
        let status = unsafe { (self.api.sgemv)(self.handle, op, m, n, &alpha, a, lda, x, 1, &beta, y, 1) };
        if status != 0 {
            return Err(lib_error("cublasSgemv_v2", status));
        }
        Ok(())
    }
}

impl Cublas {
    /// Points the handle at `stream` (`cublasSetStream_v2`), then at the workspace
    /// [`set_workspace`](Self::set_workspace) gave, if any (`cublasSetWorkspace_v2`: setting the
    /// stream put the handle back on cuBLAS's own).
    fn bind(&mut self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: a live handle and stream.
        let status = unsafe { (self.api.set_stream)(self.handle, stream.as_raw()) };
        if status != 0 {
            return Err(lib_error("cublasSetStream_v2", status));
        }
        if let Some((ptr, bytes)) = self.workspace {
            // SAFETY: the workspace `set_workspace`'s caller vouched for.
            let status = unsafe { (self.api.set_workspace)(self.handle, ptr, bytes) };
            if status != 0 {
                return Err(lib_error("cublasSetWorkspace_v2", status));
            }
        }
        Ok(())
    }

    /// The cuBLAS version (`cublasGetVersion_v2`): `major * 10000 + minor * 100 + patch` (cuBLAS
    /// 12 and later).
    pub fn version(&self) -> Result<i32> {
        let mut version: c_int = 0;
        // SAFETY: a live handle; `version` is writable.
        let status = unsafe { (self.api.get_version)(self.handle, &mut version) };
        if status != 0 {
            return Err(lib_error("cublasGetVersion_v2", status));
        }
        Ok(version)
    }

    /// Sets the handle's math mode (`cublasSetMathMode`), with
    /// `CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION` added where
    /// `disallow_reduced_precision_reduction` (PyTorch adds it when
    /// `torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction` is off; it is on by
    /// default).
    pub fn set_math_mode(&mut self, mode: MathMode, disallow_reduced_precision_reduction: bool) -> Result<()> {
        let base = match mode {
            MathMode::Default => 0,
            MathMode::Pedantic => 2,
            MathMode::Tf32TensorOp => 3,
        };
        let raw = base | if disallow_reduced_precision_reduction { 16 } else { 0 };
        // SAFETY: a live handle; a valid `cublasMath_t`.
        let status = unsafe { (self.api.set_math_mode)(self.handle, raw) };
        if status != 0 {
            return Err(lib_error("cublasSetMathMode", status));
        }
        Ok(())
    }

    /// Gives the handle `bytes` of device memory at `workspace` as its workspace, from now on
    /// (`cublasSetWorkspace_v2`, made again after the stream is set on every call). A workspace
    /// of the caller's is what CUDA graphs want: cuBLAS then allocates nothing while a stream
    /// captures. PyTorch gives its handles 32 MiB on Hopper.
    ///
    /// # Safety
    /// - `workspace` is device memory of the handle's device, `bytes` long, aligned to 256 bytes.
    /// - It stays allocated while the handle is used, and until every GEMM enqueued or captured
    ///   with it has completed (at every replay of a graph that captured one).
    /// - No other work uses it meanwhile: GEMMs of this handle on two streams at once share it,
    ///   so they must be ordered one after the other.
    pub unsafe fn set_workspace(&mut self, workspace: *mut c_void, bytes: usize) -> Result<()> {
        // SAFETY: a live handle; the memory is the caller's contract.
        let status = unsafe { (self.api.set_workspace)(self.handle, workspace, bytes) };
        if status != 0 {
            return Err(lib_error("cublasSetWorkspace_v2", status));
        }
        self.workspace = Some((workspace, bytes));
        Ok(())
    }

    /// `C = alpha op(A) op(B) + beta C` on `stream` (`cublasSetStream_v2` to `stream`, then
    /// `cublasGemmEx` with `g`'s arguments). The scalars are read on the host during the call.
    /// Capturable into a graph (give the handle a workspace first: [`set_workspace`](Self::set_workspace)).
    ///
    /// # Safety
    /// - `g.a`, `g.b` and `g.c` point to device memory of the stream's device holding the
    ///   matrices `g` describes, of their types: `op(A)` `m x k`, `op(B)` `k x n`, `C` `m x n`,
    ///   column-major with their leading dimensions (`lda >= rows of A as stored`, and so on);
    /// - C does not overlap A or B;
    /// - the memory stays allocated until the GEMM completes on `stream` (at every replay, if
    ///   captured).
    pub unsafe fn gemm_ex(&mut self, stream: StreamRef<'_>, g: &GemmEx) -> Result<()> {
        self.bind(stream)?;
        // SAFETY: the caller's contract; the scalars are read during the call.
        let status = unsafe {
            (self.api.gemm_ex)(
                self.handle,
                g.transa.raw(),
                g.transb.raw(),
                g.m,
                g.n,
                g.k,
                (&g.alpha as *const f32).cast(),
                g.a.ptr,
                g.a.ty.raw(),
                g.a.ld,
                g.b.ptr,
                g.b.ty.raw(),
                g.b.ld,
                (&g.beta as *const f32).cast(),
                g.c.ptr,
                g.c.ty.raw(),
                g.c.ld,
                g.compute.raw(),
                g.algo.raw(),
            )
        };
        if status != 0 {
            return Err(lib_error("cublasGemmEx", status));
        }
        Ok(())
    }

    /// `batch.count` GEMMs of the shape `g` gives on `stream` (`cublasSetStream_v2` to `stream`,
    /// then `cublasGemmStridedBatchedEx`): the i-th takes A, B and C `i * stride` elements after
    /// `g`'s pointers. Capturable into a graph, as [`gemm_ex`](Self::gemm_ex).
    ///
    /// # Safety
    /// - Everything [`gemm_ex`](Self::gemm_ex) requires, for each of the `count` GEMMs;
    /// - no two of the C matrices overlap.
    pub unsafe fn gemm_strided_batched_ex(
        &mut self,
        stream: StreamRef<'_>,
        g: &GemmEx,
        batch: StridedBatch,
    ) -> Result<()> {
        self.bind(stream)?;
        // SAFETY: the caller's contract; the scalars are read during the call.
        let status = unsafe {
            (self.api.gemm_strided_batched_ex)(
                self.handle,
                g.transa.raw(),
                g.transb.raw(),
                g.m,
                g.n,
                g.k,
                (&g.alpha as *const f32).cast(),
                g.a.ptr,
                g.a.ty.raw(),
                g.a.ld,
                batch.stride_a,
                g.b.ptr,
                g.b.ty.raw(),
                g.b.ld,
                batch.stride_b,
                (&g.beta as *const f32).cast(),
                g.c.ptr,
                g.c.ty.raw(),
                g.c.ld,
                batch.stride_c,
                batch.count,
                g.compute.raw(),
                g.algo.raw(),
            )
        };
        if status != 0 {
            return Err(lib_error("cublasGemmStridedBatchedEx", status));
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
