//! NCCL's C interface as loaded with `dlopen`: the types and enum values of `nccl.h`, written by
//! hand (no NCCL headers are needed to build), and the table of function pointers.

use crate::dl::Library;
use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use ordo_cuda_core::sys::cudaStream_t;
use ordo_cuda_core::Result;

/// `ncclComm_t`.
pub(crate) type RawComm = *mut c_void;
/// `ncclResult_t`.
pub(crate) type Status = c_int;

pub(crate) const SUCCESS: Status = 0;
/// `ncclInternalError`: what ordo reports when NCCL says success but hands back nothing usable.
pub(crate) const INTERNAL_ERROR: Status = 3;
/// `ncclInProgress`: a non-blocking communicator's call is still running in the background.
pub(crate) const IN_PROGRESS: Status = 7;
/// `ncclTimeout` (NCCL 2.23 and later say it themselves; ordo uses it for its own deadlines).
pub(crate) const TIMEOUT: Status = 8;
/// `NCCL_SPLIT_NOCOLOR`.
pub(crate) const SPLIT_NOCOLOR: c_int = -1;

/// The names of `ncclResult_t`'s values, by value.
pub(crate) const STATUS_NAMES: [&str; 9] = [
    "ncclSuccess",
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclInternalError",
    "ncclInvalidArgument",
    "ncclInvalidUsage",
    "ncclRemoteError",
    "ncclInProgress",
    "ncclTimeout",
];

/// `NCCL_UNIQUE_ID_BYTES`.
pub const UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawUniqueId {
    pub(crate) internal: [c_char; UNIQUE_ID_BYTES],
}

const _: () = assert!(core::mem::size_of::<RawUniqueId>() == UNIQUE_ID_BYTES);

/// `NCCL_API_MAGIC`.
pub(crate) const CONFIG_MAGIC: c_uint = 0xcafe_beef;
/// `NCCL_CONFIG_UNDEF_INT`.
pub(crate) const CONFIG_UNDEF_INT: c_int = c_int::MIN;
/// The NCCL version whose `ncclConfig_t` [`RawConfig`] lays out (2.17.0). NCCL reads the
/// `size` bytes a caller's struct says it has and takes its defaults for the fields after them
/// (`parseCommConfig`), so this prefix works with every later NCCL.
pub(crate) const CONFIG_VERSION: c_uint = 21700;

/// The first fields of `ncclConfig_t` (NCCL 2.17), with `size`, `magic` and `version` set as
/// `NCCL_CONFIG_INITIALIZER` sets them.
#[repr(C)]
pub(crate) struct RawConfig {
    pub(crate) size: usize,
    pub(crate) magic: c_uint,
    pub(crate) version: c_uint,
    pub(crate) blocking: c_int,
    pub(crate) cga_cluster_size: c_int,
    pub(crate) min_ctas: c_int,
    pub(crate) max_ctas: c_int,
    pub(crate) net_name: *const c_char,
    pub(crate) split_share: c_int,
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(core::mem::size_of::<RawConfig>() == 48);
    assert!(core::mem::offset_of!(RawConfig, magic) == 8);
    assert!(core::mem::offset_of!(RawConfig, blocking) == 16);
    assert!(core::mem::offset_of!(RawConfig, max_ctas) == 28);
    assert!(core::mem::offset_of!(RawConfig, net_name) == 32);
    assert!(core::mem::offset_of!(RawConfig, split_share) == 40);
};

impl RawConfig {
    /// `NCCL_CONFIG_INITIALIZER`: every field NCCL's default.
    pub(crate) const fn initializer() -> RawConfig {
        RawConfig {
            size: core::mem::size_of::<RawConfig>(),
            magic: CONFIG_MAGIC,
            version: CONFIG_VERSION,
            blocking: CONFIG_UNDEF_INT,
            cga_cluster_size: CONFIG_UNDEF_INT,
            min_ctas: CONFIG_UNDEF_INT,
            max_ctas: CONFIG_UNDEF_INT,
            net_name: core::ptr::null(),
            split_share: CONFIG_UNDEF_INT,
        }
    }
}

type Stream = cudaStream_t;

/// NCCL's functions. The ones every NCCL since the oldest ordo supports has (2.16, see
/// [`MIN_VERSION`](super::version::MIN_VERSION)) are required; the newer ones are `None` when the
/// loaded library lacks them, and the calls that need them then return a `NotSupported` error
/// naming the function.
pub(crate) struct Api {
    pub(crate) version: unsafe extern "C" fn(*mut c_int) -> Status,
    pub(crate) get_unique_id: unsafe extern "C" fn(*mut RawUniqueId) -> Status,
    pub(crate) init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int) -> Status,
    pub(crate) init_all: unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> Status,
    pub(crate) destroy: unsafe extern "C" fn(RawComm) -> Status,
    pub(crate) abort: unsafe extern "C" fn(RawComm) -> Status,
    pub(crate) async_error: unsafe extern "C" fn(RawComm, *mut Status) -> Status,
    pub(crate) count: unsafe extern "C" fn(RawComm, *mut c_int) -> Status,
    pub(crate) user_rank: unsafe extern "C" fn(RawComm, *mut c_int) -> Status,
    pub(crate) cu_device: unsafe extern "C" fn(RawComm, *mut c_int) -> Status,
    pub(crate) all_reduce:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status,
    pub(crate) broadcast:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status,
    pub(crate) reduce:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, c_int, RawComm, Stream) -> Status,
    pub(crate) all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, Stream) -> Status,
    pub(crate) reduce_scatter:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status,
    pub(crate) group_start: unsafe extern "C" fn() -> Status,
    pub(crate) group_end: unsafe extern "C" fn() -> Status,
    /// NCCL 2.7.
    pub(crate) send: Option<unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    /// NCCL 2.7.
    pub(crate) recv: Option<unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    /// NCCL 2.13.
    pub(crate) last_error: Option<unsafe extern "C" fn(RawComm) -> *const c_char>,
    /// NCCL 2.14.
    pub(crate) init_rank_config:
        Option<unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int, *mut RawConfig) -> Status>,
    /// NCCL 2.18.
    pub(crate) split: Option<unsafe extern "C" fn(RawComm, c_int, c_int, *mut RawComm, *mut RawConfig) -> Status>,
    /// NCCL 2.23.
    pub(crate) init_rank_scalable:
        Option<unsafe extern "C" fn(*mut RawComm, c_int, c_int, c_int, *mut RawUniqueId, *mut RawConfig) -> Status>,
}

/// Casts the address of a symbol to a function pointer type `F` (of pointer size).
///
/// # Safety
/// `F` is the symbol's C signature.
unsafe fn cast<F: Copy>(p: *mut c_void) -> F {
    const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut c_void>()) };
    // SAFETY: sizes are equal (checked at compile time); the signature is the caller's promise.
    unsafe { core::mem::transmute_copy::<*mut c_void, F>(&p) }
}

impl Api {
    /// Looks NCCL's functions up in `lib`. A required one that is missing is an error naming the
    /// library as too old.
    pub(crate) fn load(lib: &Library) -> Result<Api> {
        let need = |name: &CStr| lib.symbol(name);
        let want = |name: &CStr| lib.symbol(name).ok();
        // SAFETY: each symbol is cast to its C signature in nccl.h.
        unsafe {
            Ok(Api {
                version: cast(need(c"ncclGetVersion")?),
                get_unique_id: cast(need(c"ncclGetUniqueId")?),
                init_rank: cast(need(c"ncclCommInitRank")?),
                init_all: cast(need(c"ncclCommInitAll")?),
                destroy: cast(need(c"ncclCommDestroy")?),
                abort: cast(need(c"ncclCommAbort")?),
                async_error: cast(need(c"ncclCommGetAsyncError")?),
                count: cast(need(c"ncclCommCount")?),
                user_rank: cast(need(c"ncclCommUserRank")?),
                cu_device: cast(need(c"ncclCommCuDevice")?),
                all_reduce: cast(need(c"ncclAllReduce")?),
                broadcast: cast(need(c"ncclBroadcast")?),
                reduce: cast(need(c"ncclReduce")?),
                all_gather: cast(need(c"ncclAllGather")?),
                reduce_scatter: cast(need(c"ncclReduceScatter")?),
                group_start: cast(need(c"ncclGroupStart")?),
                group_end: cast(need(c"ncclGroupEnd")?),
                send: want(c"ncclSend").map(|p| cast(p)),
                recv: want(c"ncclRecv").map(|p| cast(p)),
                last_error: want(c"ncclGetLastError").map(|p| cast(p)),
                init_rank_config: want(c"ncclCommInitRankConfig").map(|p| cast(p)),
                split: want(c"ncclCommSplit").map(|p| cast(p)),
                init_rank_scalable: want(c"ncclCommInitRankScalable").map(|p| cast(p)),
            })
        }
    }
}
