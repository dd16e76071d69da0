//! Host functions on a stream (`cudaLaunchHostFunc`): a Rust closure that runs on a CUDA-owned
//! host thread once the work enqueued before it has completed.
//!
//! - The function **must not call CUDA**, in its body or in its drop (CUDA forbids it: it may
//!   deadlock or fail). So it may own no ordo handle (a buffer, stream or event) whose drop
//!   would call CUDA. Nothing can check that at no cost, so [`launch_host_fn`] is `unsafe`, with
//!   this rule as its contract; ordo's own host functions (the staging ring's) keep it.
//! - It **stalls its stream** while it runs: work enqueued after it waits for it to return. Keep it
//!   short (set a flag, push to a queue, wake a thread).
//! - A panic inside is caught before it could unwind into the driver and counted:
//!   [`take_host_fn_panics`] reports and clears the count. Later launches are not affected.
//! - What it lets go of that needs CUDA to free (ordo's own resources, such as a staging ring's
//!   memory) is freed later, outside callbacks (see `callback`, and
//!   [`free_deferred`](crate::staging::free_deferred)).
//! - **In a graph.** Launched on a capturing stream, the host function becomes a node of the
//!   capture's graph and CUDA calls it at *every* launch of every executable graph made from that
//!   graph. The closure is then owned by the graph through a CUDA user object: every graph and
//!   executable graph made from it holds a reference, and CUDA drops the closure (on an internal
//!   thread) once the last of them is destroyed and their launches have completed.
//!
//! From enqueue to the function running takes microseconds at the median and tens of them at the
//! tail (`ordo-bench` group `hostfn`: BENCHMARKS.md).

use crate::callback::run_callback;
use crate::error::{Error, Result};
use crate::graph::{capture_target, invalidated, CaptureTarget};
use crate::stream::StreamRef;
use alloc::boxed::Box;
use core::ffi::c_void;
use ordo_cuda_sys as sys;

/// How many host functions (and destructors of their closures, and of the other host state ordo
/// gives to graphs) have panicked since the last call, clearing the count. Process-wide.
pub fn take_host_fn_panics() -> usize {
    crate::callback::take_panics()
}

/// What a host function enqueued to run once does: consumes itself on CUDA's thread (and must not
/// call CUDA, nor may its drop).
pub(crate) trait HostCall: Send + 'static {
    /// Runs, once, on CUDA's callback thread.
    fn call(self);
}

/// A closure as a [`HostCall`].
struct OnceFn<F>(F);

impl<F: FnOnce() + Send + 'static> HostCall for OnceFn<F> {
    fn call(self) {
        (self.0)()
    }
}

/// Called once by CUDA: takes the box back and runs it.
unsafe extern "C" fn call_once<C: HostCall>(data: *mut c_void) {
    run_callback(|| {
        // SAFETY: the box `launch_once` gave to CUDA, which calls this exactly once.
        let c = unsafe { Box::from_raw(data.cast::<C>()) };
        c.call();
    });
}

/// Called by CUDA at every replay of a graph: the closure stays owned by the graph's user object.
unsafe extern "C" fn call_shared<F: Fn()>(data: *mut c_void) {
    run_callback(|| {
        // SAFETY: the closure given to a graph by `launch_host_fn`; the graph (and every executable
        // graph made from it) holds it alive while it can be launched. Shared: `F: Sync`.
        let f = unsafe { &*data.cast::<F>() };
        f();
    });
}

/// Enqueues `f` on `stream` (`cudaLaunchHostFunc`): it runs after the work enqueued before it, and
/// work enqueued after it waits for it. One small heap allocation (the boxed closure) and one
/// query of the stream's capture state (`cudaStreamGetCaptureInfo`).
///
/// On a stream that is not capturing, `f` is called once and then dropped. On a capturing stream
/// `f` is called at every launch of every executable graph made from the capture's graph, and
/// dropped once the last graph or executable graph holding it is destroyed (see the
/// [module documentation](self)); on a stream whose capture was invalidated, nothing is enqueued
/// and the error is `cudaErrorStreamCaptureInvalidated`. When CUDA refuses the launch, `f` is
/// dropped: before this returns, or, inside a capture, with the capture's graph.
///
/// A panic in `f` is caught and counted ([`take_host_fn_panics`]).
///
/// # Safety
/// Neither `f` nor its drop calls CUDA, directly or through ordo or another CUDA library: no
/// synchronise or query, no launch, record or copy, and no drop of a value that frees a CUDA
/// object (a [`Stream`](crate::Stream), [`Event`](crate::Event), buffer or graph captured by
/// move). CUDA forbids CUDA calls from a host function and from the destructor of a graph's user
/// object, where a captured `f` is dropped: such a call may deadlock (a synchronise of `f`'s own
/// stream does), fail, or corrupt the driver's state, and the rule cannot be checked without
/// slowing every call. Plain Rust work is fine: atomics, channels, `Arc`s of plain data.
pub unsafe fn launch_host_fn<F>(stream: StreamRef<'_>, f: F) -> Result<()>
where
    F: Fn() + Send + Sync + 'static,
{
    match capture_target(stream)? {
        CaptureTarget::None => launch_once(stream, OnceFn(f)).map_err(|(e, _)| e),
        CaptureTarget::Active(graph) => {
            // SAFETY: the capture's graph is alive while the capture is open, which the capture
            // contract (nobody else ends it during this call) keeps so.
            let data = unsafe { crate::graph::user_object::give_to_graph(graph, Box::new(f))? };
            // SAFETY: a live stream; `call_shared::<F>` reads `data` while the graph holds it.
            cuda_call!(unsafe {
                sys::cudaLaunchHostFunc(stream.as_raw(), Some(call_shared::<F>), data.as_ptr().cast())
            })
        }
        CaptureTarget::Invalidated => Err(invalidated("cudaLaunchHostFunc")),
    }
}

/// Enqueues `c` on `stream` to run once. The stream must not be capturing (a captured node would
/// run `c` at each replay, after the first had freed it): the caller checks [`capture_target`]
/// first, and the capture contract keeps the answer true until this call. On failure, CUDA did
/// not take `c`: it is handed back with the error.
pub(crate) fn launch_once<C: HostCall>(stream: StreamRef<'_>, c: C) -> core::result::Result<(), (Error, C)> {
    let data = Box::into_raw(Box::new(c));
    // SAFETY: a live stream; `call_once::<C>` takes back ownership of `data` when CUDA runs it.
    match cuda_call!(unsafe { sys::cudaLaunchHostFunc(stream.as_raw(), Some(call_once::<C>), data.cast()) }) {
        Ok(()) => Ok(()),
        // SAFETY: CUDA did not take `data`: it is still the box made above.
        Err(e) => Err((e, *unsafe { Box::from_raw(data) })),
    }
}
