//! Streams: [`Stream`] (owned, destroyed on drop) and [`StreamRef`] (borrowed, for streams another
//! library owns). Following CCCL's `cuda::stream_ref`, a `StreamRef` cannot be made from a null
//! handle, so the legacy default stream is never used by accident: it and the per-thread default
//! stream exist only as the named constructors [`StreamRef::legacy_default`] and
//! [`StreamRef::per_thread_default`]. Those two are `unsafe`: each names a different stream on each
//! thread or current device, so a handle (or a buffer freed on it) that moves to another thread or
//! device would silently reach another stream.
//!
//! ```compile_fail,E0133
//! // A pseudo stream needs `unsafe` and its contract.
//! let s = ordo_cuda_core::StreamRef::per_thread_default();
//! ```

use crate::capture_state::{capture_info, captures_open, CaptureStatus};
use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::event::Event;
use core::ffi::{c_int, c_uint};
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

bitflags::bitflags! {
    /// Stream creation flags (`cudaStreamCreateWithFlags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct StreamFlags: c_uint {
        /// `cudaStreamNonBlocking`: the stream does not synchronise with the legacy default stream.
        /// ordo's default.
        const NON_BLOCKING = sys::cudaStreamNonBlocking;
    }
}

impl StreamFlags {
    /// `cudaStreamDefault` (0): a blocking stream, one that synchronises with the legacy default stream.
    pub const BLOCKING: StreamFlags = StreamFlags::empty();
}

/// Whether a stream has finished its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStatus {
    /// All work enqueued so far has completed.
    Ready,
    /// Work is still pending.
    NotReady,
}

/// A borrowed CUDA stream, valid for `'a`. Copy it freely; it never destroys the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct StreamRef<'a> {
    raw: NonNull<sys::CUstream_st>,
    _stream: PhantomData<&'a sys::CUstream_st>,
}

static_assertions::assert_eq_size!(StreamRef<'static>, sys::cudaStream_t);
static_assertions::assert_eq_align!(StreamRef<'static>, sys::cudaStream_t);
static_assertions::assert_eq_size!(Option<StreamRef<'static>>, sys::cudaStream_t);

// SAFETY: CUDA streams may be used from any thread, by several threads at once.
unsafe impl Send for StreamRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for StreamRef<'_> {}

impl<'a> StreamRef<'a> {
    /// Borrows a raw stream that someone else owns. `None` for a null handle (the legacy default
    /// stream): ask for that one by name with [`StreamRef::legacy_default`].
    ///
    /// # Safety
    /// `raw` is a live stream and stays alive for `'a`; or it is `cudaStreamLegacy` or
    /// `cudaStreamPerThread`, and the caller then owes what [`StreamRef::legacy_default`] or
    /// [`StreamRef::per_thread_default`] asks.
    #[inline(always)]
    pub unsafe fn from_raw(raw: sys::cudaStream_t) -> Option<StreamRef<'a>> {
        NonNull::new(raw).map(|raw| StreamRef { raw, _stream: PhantomData })
    }

    /// The legacy default stream (`cudaStreamLegacy`): it synchronises with every blocking stream
    /// of the device. Rarely what a library wants.
    ///
    /// # Safety
    /// The handle does not name one stream: CUDA resolves it, at each call that uses it, to the
    /// legacy stream of the calling thread's current device. The caller promises that every use
    /// of the returned handle, and of anything that keeps it (a [`DeviceBuffer`] allocated on it is
    /// freed on it when dropped; a view whose [`origin`] it is orders work after it), happens while
    /// the device that is current at this call is the calling thread's current device, so that all
    /// of them reach the same stream. Otherwise a free or an ordering event lands on another
    /// device's stream, unordered with the work queued here, and the memory may be reused while
    /// that work still uses it.
    ///
    /// The caller also promises that, while the handle is used (work enqueued on it, a synchronise
    /// or blocking copy on it, a buffer freed on it), no other thread of the process has a
    /// capture open on a blocking stream (one made with [`StreamFlags::BLOCKING`], or the
    /// per-thread default stream), in any capture mode. CUDA documents such use as refused
    /// (`cudaErrorStreamCaptureImplicit`); the driver instead crashes the process
    /// (`docs/cuda-behaviours.md`, CB-03). ordo never uses the legacy stream unless given this
    /// handle, and refuses a synchronise or blocking copy on it, with a usage error, while a
    /// capture ordo began is open (a check, not a guarantee: ordo cannot see captures begun
    /// outside it, nor one that begins right after the check).
    ///
    /// [`DeviceBuffer`]: crate::memory::DeviceBuffer
    /// [`origin`]: crate::memory::DeviceSlice::origin
    #[inline(always)]
    pub unsafe fn legacy_default() -> StreamRef<'static> {
        // SAFETY: cudaStreamLegacy is 0x1, not null.
        StreamRef { raw: unsafe { NonNull::new_unchecked(sys::cudaStreamLegacy()) }, _stream: PhantomData }
    }

    /// The calling thread's per-thread default stream (`cudaStreamPerThread`).
    ///
    /// # Safety
    /// The handle does not name one stream: CUDA resolves it, at each call that uses it, to the
    /// per-thread stream of the *calling* thread on *its* current device. The caller promises that
    /// the returned handle, and anything that keeps it (a [`DeviceBuffer`] allocated on it is freed
    /// on it when dropped; a view whose [`origin`] it is orders work after it), is used only on the
    /// thread that called this function, and only while the device current at this call is that
    /// thread's current device. `StreamRef` is `Send`, so the type does not stop it from moving to
    /// another thread: there it would name that thread's stream, unordered with the work queued
    /// here (a buffer dropped there is freed while this thread's work may still use it).
    ///
    /// [`DeviceBuffer`]: crate::memory::DeviceBuffer
    /// [`origin`]: crate::memory::DeviceSlice::origin
    #[inline(always)]
    pub unsafe fn per_thread_default() -> StreamRef<'static> {
        // SAFETY: cudaStreamPerThread is 0x2, not null.
        StreamRef { raw: unsafe { NonNull::new_unchecked(sys::cudaStreamPerThread()) }, _stream: PhantomData }
    }

    /// The raw handle, for calls ordo does not wrap.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaStream_t {
        self.raw.as_ptr()
    }

    /// Whether all work enqueued so far has completed (`cudaStreamQuery`). Execution errors of
    /// earlier work surface here.
    #[inline]
    pub fn query(self) -> Result<StreamStatus> {
        // SAFETY: a live stream, by construction.
        let status = cuda_call!(unsafe { sys::cudaStreamQuery(self.as_raw()) }, answers: cudaErrorNotReady)?;
        Ok(if status == sys::cudaError::cudaErrorNotReady { StreamStatus::NotReady } else { StreamStatus::Ready })
    }

    /// Blocks the calling thread until the stream's work has completed (`cudaStreamSynchronize`).
    /// The only synchronising call on a stream, and only when the caller asks for it. On the
    /// legacy default stream, refused with a usage error while a capture ordo began is open (see
    /// [`legacy_default`](Self::legacy_default)).
    #[inline]
    pub fn synchronize(self) -> Result<()> {
        self.refuse_legacy_during_captures("cudaStreamSynchronize")?;
        // SAFETY: a live stream. Synchronising is what the caller asked for by name.
        cuda_call!(unsafe { sys::cudaStreamSynchronize(self.as_raw()) })
    }

    /// Whether this is the legacy default stream (`cudaStreamLegacy`).
    #[inline(always)]
    fn is_legacy(self) -> bool {
        self.raw.as_ptr() == sys::cudaStreamLegacy()
    }

    /// Refuses a blocking call on the legacy default stream while a capture ordo began is open:
    /// the driver crashes there when the capture is on a blocking stream (CB-03; see
    /// [`legacy_default`](Self::legacy_default)). One comparison on every other stream.
    #[inline]
    fn refuse_legacy_during_captures(self, call: &'static str) -> Result<()> {
        if self.is_legacy() && captures_open() {
            return Err(Error::usage(
                UsageKind::InvalidArgument,
                call,
                "a blocking call on the legacy default stream while a capture ordo began is open: the driver crashes there (CB-03 in ordo's docs/cuda-behaviours.md); use a stream of your own",
            ));
        }
        Ok(())
    }

    /// Makes work enqueued after this call wait until `event`'s last recorded work has completed:
    /// the driver's `cuStreamWaitEvent` where it is there (faster: BENCHMARKS.md, "Driver paths"),
    /// else or where the
    /// driver refuses it `cudaStreamWaitEvent`, whose error is the one reported. The event may
    /// belong to another device.
    #[inline(always)]
    pub fn wait_event(self, event: &Event) -> Result<()> {
        #[cfg(cuda_12_8)]
        if let Some(wait) = crate::driver_calls::stream_wait_event() {
            // SAFETY: a live stream and a live event; flags 0.
            if unsafe { wait(self.as_raw(), event.as_raw(), 0) } == 0 {
                return Ok(());
            }
        }
        // SAFETY: a live stream and a live event.
        cuda_call!(unsafe { sys::cudaStreamWaitEvent(self.as_raw(), event.as_raw(), 0) })
    }

    /// Records `event` at this point of the stream (`cudaEventRecord`).
    #[inline(always)]
    pub fn record_event(self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Makes this stream wait for everything enqueued on `other` so far: records `via` on
    /// `other`, then waits on it here (two calls, no allocation; `via` may be reused once this
    /// returns, since the wait takes the record as it is now). Captured, it joins `other`'s
    /// capture into this one's, as forks and joins do.
    #[inline]
    pub fn join(self, other: StreamRef<'_>, via: &Event) -> Result<()> {
        via.record(other)?;
        self.wait_event(via)
    }

    /// Whether the stream is capturing, or was and the capture was invalidated
    /// (`cudaStreamIsCapturing`): what a blocking call checks before it enqueues anything. On the
    /// legacy default stream, a usage error while a capture ordo began is open, before CUDA is
    /// asked (see [`legacy_default`](Self::legacy_default)).
    #[inline]
    pub(crate) fn is_capturing(self) -> Result<bool> {
        self.refuse_legacy_during_captures("copy (blocking, on the legacy default stream)")?;
        let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
        // SAFETY: a live stream; `status` is writable.
        cuda_call!(unsafe { sys::cudaStreamIsCapturing(self.as_raw(), &mut status) })?;
        Ok(status != sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone)
    }

    /// The stream's priority (`cudaStreamGetPriority`).
    pub fn priority(self) -> Result<i32> {
        let mut p: c_int = 0;
        // SAFETY: a live stream; `p` is writable.
        cuda_call!(unsafe { sys::cudaStreamGetPriority(self.as_raw(), &mut p) })?;
        Ok(p)
    }

    /// The stream's flags (`cudaStreamGetFlags`). Refused with a usage error, before CUDA is
    /// called, while the stream captures (CUDA would invalidate the capture).
    pub fn flags(self) -> Result<StreamFlags> {
        self.refuse_while_capturing("cudaStreamGetFlags", QUERY_WHILE_CAPTURING)?;
        let mut f: c_uint = 0;
        // SAFETY: a live stream; `f` is writable.
        cuda_call!(unsafe { sys::cudaStreamGetFlags(self.as_raw(), &mut f) })?;
        Ok(StreamFlags::from_bits_retain(f))
    }

    /// The stream's process-unique id (`cudaStreamGetId`). Refused with a usage error, before
    /// CUDA is called, while the stream captures (CUDA would invalidate the capture).
    pub fn id(self) -> Result<u64> {
        self.refuse_while_capturing("cudaStreamGetId", QUERY_WHILE_CAPTURING)?;
        let mut id: core::ffi::c_ulonglong = 0;
        // SAFETY: a live stream; `id` is writable.
        cuda_call!(unsafe { sys::cudaStreamGetId(self.as_raw(), &mut id) })?;
        Ok(id)
    }

    /// The device the stream belongs to (`cudaStreamGetDevice`, CUDA 12.8 and later; NotSupported
    /// when built against an older toolkit). Refused with a usage error, before CUDA is called,
    /// while the stream captures (CUDA would invalidate the capture).
    pub fn device(self) -> Result<Device> {
        self.refuse_while_capturing("cudaStreamGetDevice", QUERY_WHILE_CAPTURING)?;
        let mut d: c_int = 0;
        // SAFETY: a live stream; `d` is writable.
        cuda_call!(unsafe { sys::compat::cudaStreamGetDevice(self.as_raw(), &mut d) })?;
        Ok(Device::from_ordinal(d))
    }

    /// The stream's device where the toolkit can tell ([`device`](Self::device), 12.8+), else the
    /// calling thread's current device; also the current device while the stream captures (CUDA
    /// cannot be asked then without invalidating the capture, and capturing code runs with the
    /// stream's device current as a rule).
    pub fn device_or_current(self) -> Result<Device> {
        match self.device() {
            Err(e) if e.cuda_code() == Some(sys::cudaError::cudaErrorNotSupported) => Device::current(),
            Err(Error::Usage(u)) if u.call == "cudaStreamGetDevice" => Device::current(),
            other => other,
        }
    }

    /// Synchronises the stream; if that fails, still returns only once no work queued on it can
    /// run any more (`cudaStreamQuery` stops answering `cudaErrorNotReady`: done, or the context
    /// lost), then with the synchronise's error. For error paths that must not return while a
    /// copy may still touch memory whose borrow ends at the return.
    pub(crate) fn synchronize_or_wait_idle(self) -> Result<()> {
        let Err(first) = self.synchronize() else { return Ok(()) };
        loop {
            // SAFETY: a live stream.
            let code = unsafe { sys::cudaStreamQuery(self.as_raw()) };
            if code != sys::cudaError::cudaErrorNotReady {
                return Err(first);
            }
            #[cfg(feature = "std")]
            std::thread::yield_now();
            #[cfg(not(feature = "std"))]
            core::hint::spin_loop();
        }
    }

    /// A usage error naming `call`, saying `why`, when the stream is capturing (or holds an
    /// invalidated capture not yet ended), asked the one way legal during a capture
    /// (`cudaStreamGetCaptureInfo`). Before the queries CUDA answers with
    /// `cudaErrorStreamCaptureUnsupported` on a capturing stream, invalidating the capture, in
    /// every capture mode (`cudaStreamGetDevice`, `cudaStreamGetFlags`, `cudaStreamGetId`:
    /// `docs/cuda-behaviours.md`, CB-05; [`QUERY_WHILE_CAPTURING`]), and before work that is
    /// meant to run now rather than become a graph node (the futures').
    pub(crate) fn refuse_while_capturing(self, call: &'static str, why: &'static str) -> Result<()> {
        if self.capture_status()? != CaptureStatus::None {
            return Err(Error::usage(UsageKind::InvalidArgument, call, why));
        }
        Ok(())
    }
}

/// Why a query is refused on a capturing stream ([`StreamRef::refuse_while_capturing`]).
const QUERY_WHILE_CAPTURING: &str = "the stream is capturing: CUDA would refuse this query and invalidate the capture";

owned_handle! {
    /// An owned CUDA stream, destroyed on drop (`cudaStreamDestroy`: work already enqueued still
    /// runs, and the call does not block; a failure is kept for
    /// [`take_drop_errors`](crate::error::take_drop_errors)).
    #[derive(Debug)]
    pub struct Stream(sys::CUstream_st) = sys::cudaStream_t, destroyed by cudaStreamDestroy;
}

// SAFETY: CUDA streams may be used and destroyed from any thread.
unsafe impl Send for Stream {}
// SAFETY: every method takes `&self` and CUDA allows concurrent use of one stream.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new non-blocking stream on the current device, at default priority.
    pub fn new() -> Result<Stream> {
        Stream::with_flags(StreamFlags::NON_BLOCKING)
    }

    /// A new stream with `flags` on the current device (`cudaStreamCreateWithFlags`).
    pub fn with_flags(flags: StreamFlags) -> Result<Stream> {
        let mut raw: sys::cudaStream_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaStreamCreateWithFlags(&mut raw, flags.bits()) })?;
        Stream::from_created(raw, "cudaStreamCreateWithFlags")
    }

    /// A new stream with `flags` and `priority` on the current device
    /// (`cudaStreamCreateWithPriority`). CUDA clamps an out-of-range priority silently; ordo
    /// refuses it with a clear error instead. Lower numbers are higher priorities.
    pub fn with_priority(flags: StreamFlags, priority: i32) -> Result<Stream> {
        let (least, greatest) = Device::current()?.stream_priority_range()?;
        if priority > least || priority < greatest {
            return Err(Error::usage(
                UsageKind::InvalidArgument,
                "Stream::with_priority",
                "priority outside the device's range [greatest, least] (Device::stream_priority_range)",
            ));
        }
        let mut raw: sys::cudaStream_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaStreamCreateWithPriority(&mut raw, flags.bits(), priority) })?;
        Stream::from_created(raw, "cudaStreamCreateWithPriority")
    }

    fn from_created(raw: sys::cudaStream_t, call: &'static str) -> Result<Stream> {
        NonNull::new(raw).map(|raw| Stream { raw }).ok_or_else(|| crate::error::null_handle(call))
    }

    /// The borrowed handle, for every stream operation.
    #[inline(always)]
    pub fn as_stream(&self) -> StreamRef<'_> {
        StreamRef { raw: self.raw, _stream: PhantomData }
    }

    /// See [`StreamRef::query`].
    #[inline]
    pub fn query(&self) -> Result<StreamStatus> {
        self.as_stream().query()
    }

    /// See [`StreamRef::synchronize`].
    #[inline]
    pub fn synchronize(&self) -> Result<()> {
        self.as_stream().synchronize()
    }

    /// See [`StreamRef::wait_event`].
    #[inline(always)]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.as_stream().wait_event(event)
    }

    /// See [`StreamRef::record_event`].
    #[inline(always)]
    pub fn record_event(&self, event: &Event) -> Result<()> {
        event.record(self.as_stream())
    }

    /// See [`StreamRef::priority`].
    pub fn priority(&self) -> Result<i32> {
        self.as_stream().priority()
    }

    /// See [`StreamRef::id`].
    pub fn id(&self) -> Result<u64> {
        self.as_stream().id()
    }

    /// See [`StreamRef::device`].
    pub fn device(&self) -> Result<Device> {
        self.as_stream().device()
    }

    /// See [`StreamRef::flags`].
    pub fn flags(&self) -> Result<StreamFlags> {
        self.as_stream().flags()
    }
}

impl StreamRef<'_> {
    /// Whether the stream is capturing (`cudaStreamGetCaptureInfo`).
    pub fn capture_status(self) -> Result<CaptureStatus> {
        // SAFETY: a live stream.
        let (status, _, _) = unsafe { capture_info(self.as_raw()) }?;
        Ok(match status {
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => CaptureStatus::Active,
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusInvalidated => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        })
    }
}
