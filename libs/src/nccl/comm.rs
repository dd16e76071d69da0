//! A communicator: one rank's membership of a group of ranks (`ncclComm_t`), its making
//! (`ncclCommInitRank`, `ncclCommInitRankConfig`, `ncclCommSplit`), its health
//! (`ncclCommGetAsyncError`) and its end (`ncclCommDestroy`, `ncclCommAbort`).

use super::api::{
    Api, QueryFn, RawComm, RawConfig, Status, CONFIG_UNDEF_INT, INTERNAL_ERROR, IN_PROGRESS, SPLIT_NOCOLOR, SUCCESS,
};
use super::backoff::poll_with_backoff;
use super::error::{check, failed, nccl_error, Success};
use super::{Nccl, UniqueId};
use crate::function::{call, Function, Returned};
use core::cell::Cell;
use core::ffi::c_int;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use core::time::Duration;
use ordo_cuda_core::{Device, Error, Result, StreamRef, StreamStatus};
use std::sync::{Mutex, MutexGuard};

/// How a communicator is made (`ncclConfig_t`); `Default` is NCCL's default for every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommConfig {
    /// `false`: the making and NCCL's calls on the communicator return at once, NCCL finishing
    /// them in the background (`ncclInProgress`); poll [`Communicator::state`] or
    /// [`Communicator::wait_ready`] before relying on them. Default `true`.
    pub blocking: bool,
    /// The fewest CUDA blocks (channels) NCCL's kernels use (`minCTAs`, NCCL 2.17 and later:
    /// refused before); `None`: NCCL's choice.
    pub min_ctas: Option<u16>,
    /// The most CUDA blocks NCCL's kernels use (`maxCTAs`, NCCL 2.17 and later), leaving the
    /// rest of the GPU to compute that overlaps them; `None`: NCCL's choice.
    pub max_ctas: Option<u16>,
}

impl Default for CommConfig {
    fn default() -> CommConfig {
        CommConfig { blocking: true, min_ctas: None, max_ctas: None }
    }
}

impl CommConfig {
    pub(crate) fn raw(&self) -> RawConfig {
        let int = |v: Option<u16>| v.map_or(CONFIG_UNDEF_INT, c_int::from);
        RawConfig {
            blocking: c_int::from(self.blocking),
            min_ctas: int(self.min_ctas),
            max_ctas: int(self.max_ctas),
            ..RawConfig::initializer()
        }
    }

    /// `NotSupported` where the loaded NCCL would ignore a field set here (`minCTAs` and
    /// `maxCTAs` came with NCCL 2.17; an older NCCL reads only the fields it knows).
    pub(crate) fn check(&self, nccl: &Nccl, call: &'static str) -> Result<()> {
        if self.min_ctas.is_some() || self.max_ctas.is_some() {
            super::version::require(
                nccl.release()?,
                super::version::CTAS_IN_CONFIG,
                call,
                "minCTAs/maxCTAs in ncclConfig_t",
            )?;
        }
        Ok(())
    }
}

/// What `ncclCommGetAsyncError` says of a healthy communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommState {
    /// Made, and no call is running in the background.
    Ready,
    /// A non-blocking communicator's making or call is still running in the background.
    InProgress,
}

/// One rank of a group of ranks (`ncclComm_t`), on one device.
///
/// `Send` but not `Sync`: NCCL does not allow two threads to call on one communicator at once,
/// and the type system keeps it so (the calls take `&self`, so several can be made inside one
/// [`Group`](super::Group)).
///
/// # Drop
/// Dropping it calls `ncclCommDestroy`, which **blocks** until the collectives queued on it have
/// completed (on every rank: a dead peer makes it wait forever — call [`abort`](Self::abort)
/// instead when a peer may be gone) and synchronises its device like `cudaFree`. So drop it
/// outside hot paths and never inside a stream capture. A failure is kept for
/// [`take_drop_errors`](ordo_cuda_core::error::take_drop_errors) as an [`Error::Library`].
pub struct Communicator {
    raw: NonNull<core::ffi::c_void>,
    nccl: Nccl,
    device: Device,
    rank: Cell<usize>,
    ranks: Cell<usize>,
}

// SAFETY: a communicator may be used from another thread than the one that made it; one thread
// at a time (it is not `Sync`).
unsafe impl Send for Communicator {}

impl core::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Communicator")
            .field("device", &self.device)
            .field("rank", &self.rank.get())
            .field("ranks", &self.ranks.get())
            .finish()
    }
}

/// `(ranks, rank)` as NCCL's ints, checked: at least one rank, `rank` below `ranks`.
pub(crate) fn rank_args(call: &'static str, ranks: usize, rank: usize) -> Result<(c_int, c_int)> {
    if ranks == 0 {
        return Err(Error::invalid(call, "a communicator has at least one rank"));
    }
    if rank >= ranks {
        return Err(Error::invalid(call, "the rank must be below the number of ranks"));
    }
    let ranks = c_int::try_from(ranks).map_err(|_| Error::invalid(call, "more ranks than an int holds"))?;
    Ok((ranks, rank as c_int))
}

/// ordo's calls on a communicator that return at once (collectives, health and rank queries,
/// abort) hold its device's lock for the NCCL call itself (never across a wait or a callback), so
/// that calls of several threads on communicators of one device reach NCCL one at a time. The
/// calls that block until other ranks act (`ncclCommInitRank`, `ncclCommInitRankConfig`,
/// `ncclCommSplit`, `ncclCommDestroy`) do not take it: NCCL makes and destroys separate
/// communicators from several threads at once ("re-entrant"), and holding the lock there made
/// every other call for the device, a watchdog's wait or abort included, wait for ranks that may
/// never come. Devices past the table share a lock (more serial,
/// never less safe).
pub(crate) fn device_lock(device: Device) -> MutexGuard<'static, ()> {
    static LOCKS: [Mutex<()>; 64] = [const { Mutex::new(()) }; 64];
    let i = usize::try_from(device.ordinal()).unwrap_or(0) % LOCKS.len();
    ordo_cuda_core::sync::lock(&LOCKS[i])
}

/// The communicator an init that may return at once made (`ncclCommInitRankConfig`,
/// `ncclCommInitRankScalable`; `ncclInProgress` is made so far): on a failure, NCCL's error,
/// after a communicator NCCL handed out anyway is aborted.
pub(crate) fn made_by_init(
    nccl: &Nccl,
    device: Device,
    raw: RawComm,
    returned: Returned,
    rank: usize,
    ranks: usize,
) -> Result<Communicator> {
    let api = nccl.api();
    if !Success::Started.of(returned) {
        if let Some(c) = NonNull::new(raw) {
            let _lock = device_lock(device);
            // SAFETY: a communicator NCCL handed out before failing; nobody else has it. Its
            // status is the lesser news.
            let _aborted = call!(unsafe { api.abort(c.as_ptr()) });
        }
        return Err(failed(api, core::ptr::null_mut(), returned));
    }
    Communicator::from_raw(raw, nccl.clone(), device, rank, ranks)
        .ok_or_else(|| nccl_error(api, core::ptr::null_mut(), returned.call, INTERNAL_ERROR))
}

impl Communicator {
    /// Wraps a communicator NCCL made; `None` for null.
    pub(crate) fn from_raw(
        raw: RawComm,
        nccl: Nccl,
        device: Device,
        rank: usize,
        ranks: usize,
    ) -> Option<Communicator> {
        NonNull::new(raw).map(|raw| Communicator { raw, nccl, device, rank: Cell::new(rank), ranks: Cell::new(ranks) })
    }

    /// NCCL's handle (`ncclComm_t`), for a library or C++ code that calls NCCL itself. It stays
    /// owned by this value: never destroy or abort it through the handle. ordo makes its own calls
    /// for a device one at a time (a per-device lock that outside code does not take), so code
    /// calling NCCL with the handle must not do so on another thread while ordo's calls run.
    #[inline(always)]
    pub fn as_raw(&self) -> *mut core::ffi::c_void {
        self.raw.as_ptr()
    }

    /// The loaded library the communicator uses (for [`Nccl::group`]).
    #[inline]
    pub fn nccl_library(&self) -> &Nccl {
        &self.nccl
    }

    /// The error for `status` returned by `call` on this communicator, with NCCL's text.
    #[cold]
    pub(crate) fn error(&self, call: &'static str, status: Status) -> Error {
        nccl_error(self.nccl.api(), self.as_raw(), call, status)
    }

    /// One NCCL call on this communicator (`call` gets the table and the communicator), made and
    /// checked under its device's lock (see [`device_lock`]): `Ok` for the statuses `success`
    /// counts, NCCL's error with its text otherwise. The calls that wait for other ranks take no
    /// lock and do not come here.
    #[inline(always)]
    pub(crate) fn locked(&self, success: Success, call: impl FnOnce(&Api, RawComm) -> Returned) -> Result<()> {
        let _lock = device_lock(self.device);
        let returned = call(self.nccl.api(), self.as_raw());
        if success.of(returned) {
            Ok(())
        } else {
            Err(self.error(returned.call, returned.status))
        }
    }

    /// Makes rank `rank` of `ranks` on `device` (`ncclCommInitRank`, with `device` current for
    /// the call), joining the ranks that pass the same `id`. Blocks until every rank has joined:
    /// call it on each rank's own process or thread, or inside a [`Group`](super::Group).
    pub fn init_rank(nccl: &Nccl, device: Device, ranks: usize, id: &UniqueId, rank: usize) -> Result<Communicator> {
        let (n, r) = rank_args("Communicator::init_rank", ranks, rank)?;
        let api = nccl.api();
        let mut raw: RawComm = core::ptr::null_mut();
        let returned = device.with_current(|| {
            // No device lock: this blocks until every rank has joined (see `device_lock`).
            // SAFETY: `raw` is writable; the id is passed by value; ranks checked.
            Ok(call!(unsafe { api.init_rank(&mut raw, n, id.to_raw(), r) }))
        })?;
        check(api, raw, returned, Success::Done)?;
        Communicator::from_raw(raw, nccl.clone(), device, rank, ranks)
            .ok_or_else(|| nccl_error(api, raw, returned.call, INTERNAL_ERROR))
    }

    /// As [`init_rank`](Self::init_rank), with `config` (`ncclCommInitRankConfig`, NCCL 2.14
    /// and later). Non-blocking (`config.blocking == false`): returns at once with the
    /// communicator still being made; [`wait_ready`](Self::wait_ready) before its first call.
    pub fn init_rank_config(
        nccl: &Nccl,
        device: Device,
        ranks: usize,
        id: &UniqueId,
        rank: usize,
        config: &CommConfig,
    ) -> Result<Communicator> {
        const CALL: &str = "Communicator::init_rank_config";
        let (n, r) = rank_args(CALL, ranks, rank)?;
        let init = nccl.api().init_rank_config.get(CALL)?;
        config.check(nccl, CALL)?;
        let mut raw_config = config.raw();
        let mut raw: RawComm = core::ptr::null_mut();
        let returned = device.with_current(|| {
            // No device lock: a blocking config waits for every rank (see `device_lock`).
            // SAFETY: `raw` and `raw_config` are writable and live for the call (NCCL copies the
            // config); the id is passed by value; ranks checked.
            Ok(call!(unsafe { init(&mut raw, n, id.to_raw(), r, &mut raw_config) }))
        })?;
        made_by_init(nccl, device, raw, returned, rank, ranks)
    }

    /// Splits the communicator (`ncclCommSplit`, NCCL 2.18 and later): every rank calls it; the
    /// ranks that pass the same `color` form a new communicator, ordered by `key` (then by their
    /// rank here). `color: None` (`NCCL_SPLIT_NOCOLOR`) takes part without joining one: `Ok(None)`.
    /// `config: None` inherits this communicator's. Blocks like [`init_rank`](Self::init_rank)
    /// until the new communicator is made, also when this communicator is non-blocking: NCCL hands
    /// the new communicator out only once its split has completed. A usage error, before NCCL is
    /// called, inside an open [`Group`](super::Group) (NCCL would make it only when the group ends).
    pub fn split(&self, color: Option<u32>, key: i32, config: Option<&CommConfig>) -> Result<Option<Communicator>> {
        let split = self.nccl.api().split.get("Communicator::split")?;
        if let Some(config) = config {
            config.check(&self.nccl, "Communicator::split")?;
        }
        if super::group::open_on_this_thread() {
            return Err(Error::invalid(
                "Communicator::split",
                "not inside an open Group: NCCL hands the new communicator out only when the group ends",
            ));
        }
        let color = match color {
            None => SPLIT_NOCOLOR,
            Some(c) => c_int::try_from(c).map_err(|_| Error::invalid("Communicator::split", "color above i32::MAX"))?,
        };
        let mut raw_config = config.map(CommConfig::raw);
        let config_ptr = raw_config.as_mut().map_or(core::ptr::null_mut(), |c| c as *mut RawConfig);
        // NCCL writes the new communicator into this slot when the split completes: for a
        // non-blocking communicator that is after the call returns, on NCCL's own thread. So the
        // slot is on the heap, read once NCCL says the split is done, and leaked where that is
        // not known (an error), so that a late write never lands in freed memory.
        let slot: *mut AtomicPtr<core::ffi::c_void> = Box::into_raw(Box::new(AtomicPtr::new(core::ptr::null_mut())));
        let returned = self.device.with_current(|| {
            // No device lock: a split waits for every rank of this communicator (see `device_lock`).
            // SAFETY: a live communicator; `slot` writable, live until NCCL is done with it (see
            // above); the config null or live for the call (NCCL copies it).
            Ok(call!(unsafe { split(self.as_raw(), color, key, AtomicPtr::as_ptr(&*slot), config_ptr) }))
        });
        // A split of a non-blocking communicator runs on NCCL's thread, which marks this
        // communicator in progress until the split has completed and written the slot. NCCL
        // returns `ncclSuccess` for it, not `ncclInProgress` (NCCL 2.28: `ncclCommSplit` returns
        // the status of queueing the job), so the wait follows either: on a communicator with
        // nothing in the background it is one `ncclCommGetAsyncError`.
        let done = match returned {
            Ok(r) if Success::Started.of(r) => self.wait_done(),
            Ok(r) => Err(self.error(r.call, r.status)),
            Err(e) => Err(e),
        };
        // On an error the slot is leaked: NCCL may still write it.
        done?;
        // SAFETY: made by Box::into_raw above; NCCL has finished with it.
        let slot = unsafe { Box::from_raw(slot) };
        let raw = slot.load(Ordering::Acquire);
        let Some(c) = Communicator::from_raw(raw, self.nccl.clone(), self.device, 0, 1) else {
            return Ok(None);
        };
        c.learn_ranks()?;
        Ok(Some(c))
    }

    /// Waits until no call of a non-blocking communicator is running in the background.
    fn wait_done(&self) -> Result<()> {
        poll_with_backoff(
            Duration::MAX,
            "Communicator::split",
            || Ok((self.state()? == CommState::Ready).then_some(())),
        )
    }

    fn learn_ranks(&self) -> Result<()> {
        self.ranks.set(self.query_count()?);
        self.rank.set(self.query_rank()?);
        Ok(())
    }

    fn query_count(&self) -> Result<usize> {
        self.query(self.nccl.api().count)
    }

    fn query_rank(&self) -> Result<usize> {
        self.query(self.nccl.api().user_rank)
    }

    /// One of NCCL's int queries of the communicator (`ncclCommCount`, `ncclCommUserRank`).
    fn query(&self, query: Function<QueryFn>) -> Result<usize> {
        let mut v: c_int = 0;
        // SAFETY: a live communicator; `v` writable.
        self.locked(Success::Done, |_, comm| call!(unsafe { query(comm, &mut v) }))?;
        usize::try_from(v).map_err(|_| self.error(query.name, INTERNAL_ERROR))
    }

    /// This rank, from 0.
    #[inline]
    pub fn rank(&self) -> usize {
        self.rank.get()
    }

    /// The number of ranks.
    #[inline]
    pub fn ranks(&self) -> usize {
        self.ranks.get()
    }

    /// The device of this rank.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }

    /// The communicator's health (`ncclCommGetAsyncError`): `Ready`, `InProgress` (a
    /// non-blocking communicator still working), or the error that broke it (a peer gone, a
    /// network failure), after which only [`abort`](Self::abort) is left.
    pub fn state(&self) -> Result<CommState> {
        let mut state: Status = SUCCESS;
        // SAFETY: a live communicator; `state` writable.
        self.locked(Success::Done, |api, comm| call!(unsafe { api.async_error(comm, &mut state) }))?;
        match state {
            SUCCESS => Ok(CommState::Ready),
            IN_PROGRESS => Ok(CommState::InProgress),
            broken => Err(self.error(self.nccl.api().async_error.name, broken)),
        }
    }

    /// Waits until a non-blocking communicator is made or its last call has finished in the
    /// background ([`state`](Self::state) is `Ready`), polling; an error of the communicator, or
    /// `ncclTimeout` once `timeout` has passed.
    pub fn wait_ready(&self, timeout: Duration) -> Result<()> {
        poll_with_backoff(timeout, "Communicator::wait_ready", || Ok((self.state()? == CommState::Ready).then_some(())))
    }

    /// Waits on the host until the work enqueued so far on `stream` has completed, without
    /// hanging on a dead peer: polls the stream (`cudaStreamQuery`) and the communicator's
    /// health (`ncclCommGetAsyncError`) until the work is done (`Ok`), the communicator reports
    /// an error (that error: a peer gone, `ncclRemoteError` or `ncclSystemError`), or `timeout`
    /// passes (`ncclTimeout`). After an error, [`abort`](Self::abort) the communicator: its
    /// kernels then stop and the stream drains. A capturing `stream` is a usage error, before the
    /// stream is touched.
    pub fn wait(&self, stream: StreamRef<'_>, timeout: Duration) -> Result<()> {
        // Querying a capturing stream would end its capture: refused first, with the one query
        // that is legal during a capture.
        if !matches!(stream.capture_status()?, ordo_cuda_core::CaptureStatus::None) {
            return Err(Error::invalid(
                "Communicator::wait",
                "the stream is capturing: a host wait cannot be captured",
            ));
        }
        poll_with_backoff(timeout, "Communicator::wait", || {
            self.state()?;
            Ok((stream.query()? == StreamStatus::Ready).then_some(()))
        })
    }

    /// Aborts the communicator (`ncclCommAbort`): stops its work still running on the device and
    /// frees it without waiting for the other ranks. For a communicator whose peer may be gone,
    /// where dropping it (`ncclCommDestroy`) could wait forever.
    pub fn abort(self) -> Result<()> {
        let this = core::mem::ManuallyDrop::new(self);
        let returned = {
            let api = this.nccl.api();
            let _lock = device_lock(this.device);
            // SAFETY: our communicator, not used again (not dropped).
            call!(unsafe { api.abort(this.as_raw()) })
        };
        // SAFETY: the library handle is moved out once, the communicator is forgotten.
        let nccl = unsafe { core::ptr::read(&this.nccl) };
        // Not `locked`: the communicator is gone, so NCCL's text is asked of none.
        let result = check(nccl.api(), core::ptr::null_mut(), returned, Success::Done);
        drop(nccl);
        result
    }
}

impl Communicator {
    /// Ends this value without `ncclCommDestroy`: for a [`BorrowedCommunicator`](super::BorrowedCommunicator),
    /// whose NCCL communicator stays its owner's. Only the library handle is released.
    pub(crate) fn forget_handle(self) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the library handle is moved out once; the rest of `this` is never dropped.
        drop(unsafe { core::ptr::read(&this.nccl) });
    }
}

impl Drop for Communicator {
    /// Waits for the queued collectives (see [`Communicator`]).
    fn drop(&mut self) {
        // No device lock: destroy waits for the queued collectives of every rank (see
        // `device_lock`).
        let api = self.nccl.api();
        // SAFETY: our communicator; the library stays loaded until `self.nccl` drops after this.
        let returned = call!(unsafe { api.destroy(self.as_raw()) });
        if let Err(e) = check(api, core::ptr::null_mut(), returned, Success::Started) {
            ordo_cuda_core::error::record_drop_error_value(e);
        }
    }
}
