//! NCCL collectives as stream-ordered operations (feature `nccl`).
//!
//! NCCL is loaded at run time with `dlopen` (`libnccl.so.2`, or the file `ORDO_NCCL` names), so
//! building needs no NCCL. An all-reduce is enqueued on a stream like a kernel: join it to compute
//! streams with events, and compute on other streams overlaps it. On machines with NVLink, keep
//! NVLink multicast off where the platform requires it (`NCCL_NVLS_ENABLE=0`).

use crate::dl::Library;
use core::ffi::{c_int, c_void};
use ordo_core::error::LibraryError;
use ordo_core::{Device, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

type Comm = *mut c_void;
type Status = c_int;
const NCCL_FLOAT32: c_int = 7;
const NCCL_SUM: c_int = 0;

type InitAllFn = unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> Status;
type DestroyFn = unsafe extern "C" fn(Comm) -> Status;
type AllReduceFn =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, ordo_core::sys::cudaStream_t) -> Status;
type GroupFn = unsafe extern "C" fn() -> Status;
type VersionFn = unsafe extern "C" fn(*mut c_int) -> Status;

struct Api {
    init_all: InitAllFn,
    destroy: DestroyFn,
    all_reduce: AllReduceFn,
    group_start: GroupFn,
    group_end: GroupFn,
    version: VersionFn,
}

/// NCCL communicators for several devices of this process (`ncclCommInitAll`).
///
/// # Drop
/// Dropping them calls `ncclCommDestroy` on each communicator, which **blocks**: it finalises the
/// communicator first (waiting until the collectives still queued on it have completed) and then
/// frees its device memory, which synchronises the communicator's device like `cudaFree`.
/// So drop `Communicators` outside hot paths and never inside a stream capture; keep them for the
/// life of the work instead. A failure of `ncclCommDestroy` is kept for
/// [`take_drop_errors`](ordo_core::error::take_drop_errors) as an [`Error::Library`].
pub struct Communicators {
    api: Api,
    comms: Vec<Comm>,
    devices: Vec<Device>,
    // Dropped after the communicators (fields drop in order).
    _lib: Library,
}

// SAFETY: communicators may move between threads; calls on one communicator are not made
// concurrently through `&mut self`.
unsafe impl Send for Communicators {}

fn nccl_error(call: &'static str, status: Status) -> Error {
    Error::Library(LibraryError { library: "NCCL", call, status })
}

impl Communicators {
    /// Loads NCCL and creates one communicator per device in `devices` (at least two).
    pub fn new(devices: &[Device]) -> Result<Communicators> {
        if devices.len() < 2 {
            return Err(Error::invalid("Communicators::new", "a collective needs at least two devices"));
        }
        let lib = Library::open(
            "ORDO_NCCL",
            &[c"libnccl.so.2", c"libnccl.so"],
            "Communicators::new",
            "libnccl.so.2 not found by dlopen (set ORDO_NCCL to its path)",
        )?;
        // SAFETY: each symbol is cast to its documented C signature.
        let api = unsafe {
            Api {
                init_all: core::mem::transmute::<*mut c_void, InitAllFn>(lib.symbol(c"ncclCommInitAll")?),
                destroy: core::mem::transmute::<*mut c_void, DestroyFn>(lib.symbol(c"ncclCommDestroy")?),
                all_reduce: core::mem::transmute::<*mut c_void, AllReduceFn>(lib.symbol(c"ncclAllReduce")?),
                group_start: core::mem::transmute::<*mut c_void, GroupFn>(lib.symbol(c"ncclGroupStart")?),
                group_end: core::mem::transmute::<*mut c_void, GroupFn>(lib.symbol(c"ncclGroupEnd")?),
                version: core::mem::transmute::<*mut c_void, VersionFn>(lib.symbol(c"ncclGetVersion")?),
            }
        };
        let ordinals: Vec<c_int> = devices.iter().map(|d| d.ordinal()).collect();
        let mut comms = vec![core::ptr::null_mut(); devices.len()];
        // SAFETY: arrays of `devices.len()` elements.
        let status = unsafe { (api.init_all)(comms.as_mut_ptr(), ordinals.len() as c_int, ordinals.as_ptr()) };
        if status != 0 {
            return Err(nccl_error("ncclCommInitAll", status));
        }
        Ok(Communicators { api, comms, devices: devices.to_vec(), _lib: lib })
    }

    /// NCCL's version code (`ncclGetVersion`), e.g. 22703 for 2.27.3.
    pub fn version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: `v` is writable.
        let status = unsafe { (self.api.version)(&mut v) };
        if status != 0 {
            return Err(nccl_error("ncclGetVersion", status));
        }
        Ok(v)
    }

    /// The devices, in communicator order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Sum-all-reduces `f32` buffers: for each device `i`, `recv[i] = Σ_j send[j]`, enqueued on
    /// `streams[i]` (a stream of device `i`) inside one NCCL group. Returns once enqueued.
    ///
    /// # Safety
    /// Each buffer is device memory of its device, all of one length, allocated until the
    /// collective completes on its stream.
    pub unsafe fn all_reduce_sum_f32(
        &mut self,
        send: &[DeviceSlice<'_, f32>],
        recv: &mut [DeviceSliceMut<'_, f32>],
        streams: &[StreamRef<'_>],
    ) -> Result<()> {
        const CALL: &str = "Communicators::all_reduce_sum_f32";
        let n = self.comms.len();
        if send.len() != n || recv.len() != n || streams.len() != n {
            return Err(Error::invalid(CALL, "one send buffer, receive buffer and stream per device"));
        }
        let count = send[0].len();
        if count == 0 || send.iter().any(|s| s.len() != count) || recv.iter().any(|r| r.len() != count) {
            return Err(Error::invalid(CALL, "buffers must all have one non-zero length"));
        }
        // SAFETY: no arguments.
        let status = unsafe { (self.api.group_start)() };
        if status != 0 {
            return Err(nccl_error("ncclGroupStart", status));
        }
        let mut first_error = None;
        for i in 0..n {
            // SAFETY: sizes checked; lifetimes owed by the caller.
            let status = unsafe {
                (self.api.all_reduce)(
                    send[i].as_ptr().cast(),
                    recv[i].as_mut_ptr().cast(),
                    count,
                    NCCL_FLOAT32,
                    NCCL_SUM,
                    self.comms[i],
                    streams[i].as_raw(),
                )
            };
            if status != 0 && first_error.is_none() {
                first_error = Some(nccl_error("ncclAllReduce", status));
            }
        }
        // SAFETY: closes the group opened above, also after an error.
        let status = unsafe { (self.api.group_end)() };
        if let Some(e) = first_error {
            return Err(e);
        }
        if status != 0 {
            return Err(nccl_error("ncclGroupEnd", status));
        }
        Ok(())
    }
}

impl Drop for Communicators {
    /// Waits for each communicator's queued collectives (see [`Communicators`]).
    fn drop(&mut self) {
        for &c in &self.comms {
            // SAFETY: our communicators; the library is closed after this (field order).
            let status = unsafe { (self.api.destroy)(c) };
            if status != 0 {
                ordo_core::error::record_drop_error_value(nccl_error("ncclCommDestroy", status));
            }
        }
    }
}
