//! NCCL's C interface as loaded with `dlopen`: the types and enum values of `nccl.h`, written by
//! hand (no NCCL headers are needed to build), and the table of its functions, each with its name.

use super::version::missing_function;
use crate::dl::Library;
use crate::function::{c_name, Function};
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

/// `ncclCommCount`, `ncclCommUserRank`, `ncclCommCuDevice`: an int of a communicator.
pub(crate) type QueryFn = unsafe extern "C" fn(RawComm, *mut c_int) -> Status;

/// A function of newer NCCLs than the oldest ordo supports: `None` where the loaded library lacks
/// it, with its name and the release that brought it, for the error of the call that needs it.
pub(crate) struct Optional<F> {
    pub(crate) f: Option<F>,
    name: &'static str,
    since: &'static str,
}

impl<F: Copy> Optional<F> {
    /// The function `name` (NCCL `since` and later) of `lib`, if it has it.
    ///
    /// # Safety
    /// `F` is the function's C signature.
    unsafe fn find(lib: &Library, name: &'static CStr, since: &'static str) -> Optional<F> {
        // SAFETY: the caller's contract.
        let f = unsafe { Function::<F>::find(lib, name) }.map(|function| function.f);
        Optional { f, name: c_name(name), since }
    }

    /// The function, or `NotSupported` from `call` naming it and the release that brought it.
    pub(crate) fn get(&self, call: &'static str) -> Result<Function<F>> {
        match self.f {
            Some(f) => Ok(Function { f, name: self.name }),
            None => Err(missing_function(call, self.name, self.since)),
        }
    }
}

/// NCCL's functions, each with its C name (see [`call!`](crate::function::call)). The ones every
/// NCCL since the oldest ordo supports has (2.16, see [`MIN_VERSION`](super::version::MIN_VERSION))
/// are required; the newer ones are [`Optional`], and the calls that need them then return a
/// `NotSupported` error naming the function and its release ([`Api::load`] says which).
pub(crate) struct Api {
    pub(crate) version: Function<unsafe extern "C" fn(*mut c_int) -> Status>,
    pub(crate) get_unique_id: Function<unsafe extern "C" fn(*mut RawUniqueId) -> Status>,
    pub(crate) init_rank: Function<unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int) -> Status>,
    pub(crate) init_all: Function<unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> Status>,
    pub(crate) destroy: Function<unsafe extern "C" fn(RawComm) -> Status>,
    pub(crate) abort: Function<unsafe extern "C" fn(RawComm) -> Status>,
    pub(crate) async_error: Function<unsafe extern "C" fn(RawComm, *mut Status) -> Status>,
    pub(crate) count: Function<QueryFn>,
    pub(crate) user_rank: Function<QueryFn>,
    pub(crate) cu_device: Function<QueryFn>,
    pub(crate) all_reduce:
        Function<unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    pub(crate) broadcast:
        Function<unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    pub(crate) reduce: Function<
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, c_int, RawComm, Stream) -> Status,
    >,
    pub(crate) all_gather:
        Function<unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, Stream) -> Status>,
    pub(crate) reduce_scatter:
        Function<unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    pub(crate) group_start: Function<unsafe extern "C" fn() -> Status>,
    pub(crate) group_end: Function<unsafe extern "C" fn() -> Status>,
    pub(crate) send: Optional<unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    pub(crate) recv: Optional<unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, Stream) -> Status>,
    pub(crate) last_error: Optional<unsafe extern "C" fn(RawComm) -> *const c_char>,
    pub(crate) init_rank_config:
        Optional<unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int, *mut RawConfig) -> Status>,
    pub(crate) split: Optional<unsafe extern "C" fn(RawComm, c_int, c_int, *mut RawComm, *mut RawConfig) -> Status>,
    pub(crate) init_rank_scalable:
        Optional<unsafe extern "C" fn(*mut RawComm, c_int, c_int, c_int, *mut RawUniqueId, *mut RawConfig) -> Status>,
}

impl Api {
    /// Looks NCCL's functions up in `lib`. A required one that is missing is an error naming the
    /// library as too old.
    pub(crate) fn load(lib: &Library) -> Result<Api> {
        // SAFETY: each function is loaded as its C signature in nccl.h.
        unsafe {
            Ok(Api {
                version: Function::load(lib, c"ncclGetVersion")?,
                get_unique_id: Function::load(lib, c"ncclGetUniqueId")?,
                init_rank: Function::load(lib, c"ncclCommInitRank")?,
                init_all: Function::load(lib, c"ncclCommInitAll")?,
                destroy: Function::load(lib, c"ncclCommDestroy")?,
                abort: Function::load(lib, c"ncclCommAbort")?,
                async_error: Function::load(lib, c"ncclCommGetAsyncError")?,
                count: Function::load(lib, c"ncclCommCount")?,
                user_rank: Function::load(lib, c"ncclCommUserRank")?,
                cu_device: Function::load(lib, c"ncclCommCuDevice")?,
                all_reduce: Function::load(lib, c"ncclAllReduce")?,
                broadcast: Function::load(lib, c"ncclBroadcast")?,
                reduce: Function::load(lib, c"ncclReduce")?,
                all_gather: Function::load(lib, c"ncclAllGather")?,
                reduce_scatter: Function::load(lib, c"ncclReduceScatter")?,
                group_start: Function::load(lib, c"ncclGroupStart")?,
                group_end: Function::load(lib, c"ncclGroupEnd")?,
                send: Optional::find(lib, c"ncclSend", "2.7"),
                recv: Optional::find(lib, c"ncclRecv", "2.7"),
                last_error: Optional::find(lib, c"ncclGetLastError", "2.13"),
                init_rank_config: Optional::find(lib, c"ncclCommInitRankConfig", "2.14"),
                split: Optional::find(lib, c"ncclCommSplit", "2.18"),
                init_rank_scalable: Optional::find(lib, c"ncclCommInitRankScalable", "2.23"),
            })
        }
    }
}
