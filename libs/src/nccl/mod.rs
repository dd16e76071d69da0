//! NCCL collectives as stream-ordered operations (feature `nccl`).
//!
//! NCCL is loaded at run time with `dlopen` (`libnccl.so.2`, or the file `ORDO_NCCL` names), so
//! building needs no NCCL; a library without a function a call needs gives that call an error,
//! never a panic. NCCL 2.16 and later ([`MIN_VERSION`]; what needs a newer one: [`Version`]).
//! Ways to get communicators:
//! - **one process per GPU, started by a launcher** (torchrun, `srun`, `mpirun`; across hosts
//!   too): [`Rendezvous::from_env`] reads the ranks from the launcher's variables ([`LaunchEnv`])
//!   and gets the unique id from `NCCL_COMM_ID`, a shared folder or the caller's store
//!   ([`IdSource`]), then [`Rendezvous::init_rank`] makes the communicator by name. ordo runs no
//!   server of its own (`docs/many-hosts.md`);
//! - **one process per GPU, the id carried by the caller**: rank 0 makes a [`UniqueId`]
//!   ([`Nccl::unique_id`]), the caller carries its bytes to every rank (a file, a pipe, TCP, or
//!   [`IdExchange`] over a store), and each rank makes its [`Communicator`] with
//!   [`Communicator::init_rank`] (or [`init_rank_config`](Communicator::init_rank_config),
//!   non-blocking if asked, or [`init_rank_scalable`](Communicator::init_rank_scalable) from several
//!   ids for large jobs);
//! - **one process driving several GPUs**: [`Communicators::new`] (`ncclCommInitAll`), one
//!   [`Communicator`] a device;
//! - **an engine's own communicator** (PyTorch, vLLM, TensorRT-LLM): borrowed as a
//!   [`BorrowedCommunicator`], which offers every call of a [`Communicator`] but none of its ends.
//!
//! Each collective is enqueued on the caller's stream like a kernel: one NCCL call, no
//! synchronisation, no allocation, and it can be captured into a CUDA graph. Join it to compute
//! streams with events; compute on other streams overlaps it. Several calls that must start
//! together (send and receive, or one call on each of several communicators of one process) go
//! inside a [`Group`].
//!
//! # Failures
//! NCCL's status and its own text (`ncclGetLastError`) come back as [`Error::Library`]
//! (`library: "NCCL"`). A peer that dies leaves the collectives of the others waiting on the
//! device: [`Communicator::wait`] waits for a stream with a deadline, polling
//! `ncclCommGetAsyncError`, and returns an error instead of hanging; then
//! [`Communicator::abort`] stops the communicator's work so that its streams can drain.
//!
//! # Contract of the collectives
//! The work runs on the device after the call returns, reading and writing the buffers and
//! waiting for the other ranks, so the caller owes what the types cannot carry:
//! - each buffer is device memory the communicator's device can access (its own, or a peer's
//!   opened to it), stays allocated until the work completes on `stream` (at every replay, if the
//!   call was captured into a graph), and is not written by other work meanwhile (nor read, for
//!   the buffers this call writes);
//! - every rank makes the matching call, in the same order on the communicator, with the same
//!   element type, operation, count and root: NCCL cannot check other ranks' sizes, and a
//!   mismatch reads or writes past a buffer or waits forever;
//! - `stream` belongs to the communicator's device;
//! - the calls of one [`Group`] are all made by the thread that opened it (a group is per thread),
//!   and no other thread issues NCCL calls for communicators of the same devices while it is open
//!   (NCCL's rule for grouped calls).
//!
//! # Threads
//! NCCL forbids calls on one communicator, or on communicators of one device, from several
//! threads at once. A [`Communicator`] is `Send` but not `Sync` (one thread at a time), and every
//! NCCL call ordo makes for a communicator holds that device's lock for the call itself, so safe
//! code on several threads cannot race inside NCCL. Grouped calls are the caller's to keep on one
//! thread (above).
//!
//! ordo checks what one rank can: the lengths against each other and the count of ranks, roots
//! and peers below the number of ranks. A non-blocking communicator's `ncclInProgress` is success
//! so far (see [`Communicator::state`]).
//!
//! # Environment
//! ordo reads `ORDO_NCCL` (the library's path), the launchers' variables ([`LaunchEnv`]),
//! `NCCL_COMM_ID` and `ORDO_NCCL_ID_DIR` ([`IdSource`]); everything else is NCCL's own. On
//! machines with NVLink, keep NVLink multicast off where the platform requires it
//! (`NCCL_NVLS_ENABLE=0`). `NCCL_DEBUG=WARN` makes NCCL say why it failed on standard error;
//! `NCCL_SOCKET_IFNAME` picks the network interface of the bootstrap across machines.
//!
//! [`Error::Library`]: ordo_cuda_core::Error::Library

mod all;
mod api;
mod backoff;
pub mod bandwidth;
mod borrowed;
mod collectives;
mod comm;
mod error;
mod exchange;
mod group;
mod id;
mod launch;
mod rendezvous;
mod scalable;
mod types;
mod version;

pub use all::Communicators;
pub use api::UNIQUE_ID_BYTES;
pub use backoff::poll_with_backoff;
pub use borrowed::BorrowedCommunicator;
pub use comm::{CommConfig, CommState, Communicator};
pub use error::{is_timeout, status_name, timeout as timeout_error};
pub use exchange::{ClosureStore, FolderStore, IdExchange, IdStore};
pub use group::Group;
pub use id::UniqueId;
pub use launch::{LaunchEnv, Launcher};
pub use rendezvous::{IdSource, Rendezvous};
pub use scalable::{first_root_rank, root_of_rank};
pub use types::{Bf16, DataType, ForEachType, NcclType, ReduceOp, F16};
pub use version::{Version, MIN_VERSION};

use crate::dl::Library;
use crate::function::call;
use api::{Api, RawUniqueId};
use ordo_cuda_core::Result;
use std::sync::Arc;

struct Loaded {
    api: Api,
    // Dropped after everything that used the API (each holder keeps the `Arc`).
    _lib: Library,
}

/// The loaded NCCL library: cheap to clone; every communicator keeps one, so the library stays
/// loaded while any is alive.
#[derive(Clone)]
pub struct Nccl {
    inner: Arc<Loaded>,
}

// SAFETY: the function table is plain addresses; NCCL's functions may be called from any thread.
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

impl core::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Nccl")
    }
}

impl Nccl {
    /// Loads NCCL: the file `ORDO_NCCL` names, else `libnccl.so.2` (or `libnccl.so`) from the
    /// loader's path. Not found: [`UsageKind::NotSupported`](ordo_cuda_core::UsageKind::NotSupported);
    /// a library older than [`MIN_VERSION`] (2.16), or one without a function every call needs:
    /// the same, naming the release or the function.
    ///
    /// Once loaded, NCCL stays loaded for the life of the process, and later calls return the
    /// same library (whatever `ORDO_NCCL` says by then): NCCL runs threads of its own that
    /// outlive any call (`ncclGetUniqueId` starts the bootstrap root's, which waits for every
    /// rank), and unloading the library under them crashes the process (`docs/cuda-behaviours.md`,
    /// CB-22).
    pub fn load() -> Result<Nccl> {
        static LOADED: std::sync::OnceLock<Nccl> = std::sync::OnceLock::new();
        if let Some(nccl) = LOADED.get() {
            return Ok(nccl.clone());
        }
        let lib = Library::open(
            "ORDO_NCCL",
            &[c"libnccl.so.2", c"libnccl.so"],
            "Nccl::load",
            "libnccl.so.2 not found by dlopen (set ORDO_NCCL to its path)",
        )?;
        let api = Api::load(&lib)?;
        let loaded = Nccl { inner: Arc::new(Loaded { api, _lib: lib }) };
        version::require(loaded.release()?, MIN_VERSION, "Nccl::load", "ordo")?;
        // A thread that lost a race drops its own handle: dlclose then only lowers the loader's
        // count of a library the kept handle holds open.
        Ok(LOADED.get_or_init(|| loaded).clone())
    }

    #[inline(always)]
    pub(crate) fn api(&self) -> &Api {
        &self.inner.api
    }

    /// NCCL's version code (`ncclGetVersion`), e.g. 22703 for 2.27.3.
    pub fn version(&self) -> Result<i32> {
        let mut v = 0;
        let api = self.api();
        // SAFETY: `v` is writable.
        error::check(api, core::ptr::null_mut(), call!(unsafe { api.version(&mut v) }), error::Success::Done)?;
        Ok(v)
    }

    /// NCCL's release ([`version`](Self::version) read as `major.minor.patch`).
    pub fn release(&self) -> Result<Version> {
        let code = self.version()?;
        Version::from_code(code).ok_or_else(|| {
            error::detailed(self.api().version.name, api::INTERNAL_ERROR, Some("a negative version code"))
        })
    }

    /// A new unique id (`ncclGetUniqueId`), made by one rank and carried to the others. Opens the
    /// bootstrap socket on this process: call it on the process of rank 0. With `NCCL_COMM_ID`
    /// set in the process environment (`host:port`), NCCL opens nothing here and, from NCCL 2.22,
    /// every process makes the same id; rank 0's [`Communicator::init_rank`] then opens the
    /// bootstrap socket at that address.
    pub fn unique_id(&self) -> Result<UniqueId> {
        let mut raw = RawUniqueId { internal: [0; UNIQUE_ID_BYTES] };
        let api = self.api();
        // SAFETY: `raw` is writable, of NCCL's layout.
        error::check(api, core::ptr::null_mut(), call!(unsafe { api.get_unique_id(&mut raw) }), error::Success::Done)?;
        Ok(UniqueId::from_raw(raw))
    }

    /// Starts a group (`ncclGroupStart`); see [`Group`].
    pub fn group(&self) -> Result<Group<'_>> {
        Group::start(self)
    }
}
