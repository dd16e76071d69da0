//! Event-based timing: two [`TimingEvent`]s behind a handle. Recording and reading are safe from
//! several threads at once (CUDA's event calls are); which record a read sees is then the callers'
//! business.

use super::check::{non_null, stream_ref, write_out};
use super::context::InContext;
use super::handles;
use super::status::{guard, guard_void, OrdoStatus};
use ordo_cuda_core::{sys, TimingEvent};

/// The C handle type of a timer: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoTimer {
    _opaque: [u8; 0],
}

struct Timer {
    start: TimingEvent,
    stop: TimingEvent,
}

/// A timer and the context its events belong to (see [`super::context`]).
type TimerObject = InContext<Timer>;

/// Creates a timer: two timing events of the current device.
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_create(out: *mut *mut OrdoTimer) -> OrdoStatus {
    handles::create("ordo_timer_create", out, || {
        Ok(InContext::new(Timer { start: TimingEvent::new()?, stop: TimingEvent::new()? })?)
    })
}

/// Records the event `which` picks of the timer on `stream`: the body of `ordo_timer_start` and
/// `ordo_timer_stop`.
fn record(
    export: &'static str,
    timer: *mut OrdoTimer,
    stream: sys::cudaStream_t,
    which: impl FnOnce(&Timer) -> &TimingEvent,
) -> OrdoStatus {
    guard(export, || handles::with_live(timer, |t| Ok(which(t).record(stream_ref(stream)?)?)))
}

/// Records the timer's start on `stream`.
///
/// # Safety
/// The C contract: `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_start(timer: *mut OrdoTimer, stream: sys::cudaStream_t) -> OrdoStatus {
    record("ordo_timer_start", timer, stream, |t| &t.start)
}

/// Records the timer's stop on `stream`.
///
/// # Safety
/// The C contract: `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_stop(timer: *mut OrdoTimer, stream: sys::cudaStream_t) -> OrdoStatus {
    record("ordo_timer_stop", timer, stream, |t| &t.stop)
}

/// Milliseconds from start to stop. `ORDO_NOT_READY` while the stop has not completed (it does
/// not wait); `ORDO_ERROR_INVALID_ARGUMENT` if either was never recorded.
///
/// # Safety
/// The C contract: `ms` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_elapsed_ms(timer: *mut OrdoTimer, ms: *mut f32) -> OrdoStatus {
    guard("ordo_timer_elapsed_ms", || {
        let t = handles::get::<TimerObject, _>(timer)?;
        non_null(ms.cast_const(), "ms")?;
        let t = t.get()?;
        let v = t.stop.elapsed_ms_since(&t.start)?;
        write_out(ms, v, "ms")
    })
}

/// Destroys a timer. NULL, destroyed and unknown handles, and handles of another kind, are
/// ignored. Safe for any value: the handle is only looked up, never dereferenced.
#[no_mangle]
pub extern "C" fn ordo_timer_destroy(timer: *mut OrdoTimer) {
    guard_void("ordo_timer_destroy", || drop(handles::remove::<TimerObject, _>(timer)));
}
