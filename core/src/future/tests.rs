//! The wake slots and the futures without a GPU: the notifier's end is called as CUDA would call
//! it (on another thread, marked as a CUDA callback), at every point of the future's life.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::completion::Completion;
use super::slot::{self, SlotState, WakeSlot};
use super::{poller, InFlight};
use crate::callback::run_callback;
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::task::{Context, Poll, Waker};
use ordo_cuda_sys as sys;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::task::Wake;
use std::thread;
use std::time::{Duration, Instant};

/// Counts the allocations of each thread (the lib's test binary only).
struct Counting;

std::thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The slots are process-wide and recycled last-in first-out: a slot one test frees is the next
/// one another test takes. Each test holds this lock, so that a slot's state after it was freed
/// is this test's to check.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::sync::lock(&SERIAL)
}

/// A waker that counts its wakes.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker::default());
    (counter.clone(), Waker::from(counter))
}

/// An armed completion and its slot, as `arm` makes them (without a stream).
fn armed() -> (Completion, &'static WakeSlot) {
    let slot = slot::acquire().unwrap();
    (Completion::armed(slot, "test"), slot)
}

/// The notifier's end as CUDA runs it: on another thread, marked as a callback.
fn fire_on_cuda_thread(slot: &'static WakeSlot, code: sys::cudaError_t) {
    thread::spawn(move || run_callback(|| slot.fire(code))).join().unwrap();
}

fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn fired_before_the_first_poll_resolves_at_once_and_frees_the_slot() {
    let _serial = serial();
    let (counter, waker) = waker();
    let (mut c, slot) = armed();
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    assert_eq!(slot.state(), SlotState::Fired);
    assert!(matches!(poll(&mut c, &waker), Poll::Ready(Ok(()))));
    assert_eq!(slot.state(), SlotState::Free);
    assert!(matches!(poll(&mut c, &waker), Poll::Ready(Ok(()))), "polled again: the same result");
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
}

#[test]
fn pending_then_fired_wakes_once_and_reports_the_status() {
    let _serial = serial();
    let (counter, waker) = waker();
    let (mut c, slot) = armed();
    assert!(poll(&mut c, &waker).is_pending());
    assert!(poll(&mut c, &waker).is_pending(), "a second poll keeps one waker");
    fire_on_cuda_thread(slot, sys::cudaError::cudaErrorIllegalAddress);
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    match poll(&mut c, &waker) {
        Poll::Ready(Err(e)) => {
            assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorIllegalAddress));
            assert!(e.is_sticky());
        }
        other => panic!("expected the stream's error, got {other:?}"),
    }
    assert_eq!(slot.state(), SlotState::Free);
}

#[test]
fn dropped_at_every_point_the_slot_comes_back_once() {
    let _serial = serial();
    let (counter, waker) = waker();
    // Before the first poll, then fired.
    let (c, slot) = armed();
    drop(c);
    assert_eq!(slot.state(), SlotState::Abandoned);
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    assert_eq!(slot.state(), SlotState::Free);
    // While pending, then fired: the waker is let go, not woken.
    let (mut c, slot) = armed();
    assert!(poll(&mut c, &waker).is_pending());
    drop(c);
    assert_eq!(slot.state(), SlotState::Abandoned);
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    assert_eq!(slot.state(), SlotState::Free);
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    // After it fired, before it was polled.
    let (c, slot) = armed();
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    drop(c);
    assert_eq!(slot.state(), SlotState::Free);
    // After it resolved.
    let (mut c, slot) = armed();
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    assert!(poll(&mut c, &waker).is_ready());
    drop(c);
    assert_eq!(slot.state(), SlotState::Free);
}

#[test]
fn a_future_and_its_callback_racing_to_let_go_never_lose_or_reuse_a_slot() {
    let _serial = serial();
    // Drop and fire on two threads at once, many times: each slot must come back exactly once
    // (a slot freed twice would be handed to two futures; one never freed would leak).
    let before = slot::total();
    for _ in 0..2000 {
        let (c, slot) = armed();
        let go = Arc::new(AtomicBool::new(false));
        let go2 = go.clone();
        let firer = thread::spawn(move || {
            while !go2.load(Ordering::Acquire) {}
            run_callback(|| slot.fire(sys::cudaError::cudaSuccess));
        });
        go.store(true, Ordering::Release);
        drop(c);
        firer.join().unwrap();
        assert_eq!(slot.state(), SlotState::Free);
    }
    assert!(slot::total() <= before + 64, "slots leaked: the slab grew");
}

/// Records where and when it was dropped.
struct Probe {
    fired: Arc<AtomicBool>,
    dropped_early: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
    owner: thread::ThreadId,
    dropped_on_owner: Arc<AtomicBool>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.fired.load(Ordering::SeqCst) {
            self.dropped_early.store(true, Ordering::SeqCst);
        }
        if thread::current().id() == self.owner || crate::callback::in_cuda_callback() {
            self.dropped_on_owner.store(true, Ordering::SeqCst);
        }
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn probe() -> (Probe, Arc<AtomicBool>, Arc<AtomicBool>, Arc<AtomicBool>, Arc<AtomicBool>) {
    let flags: [Arc<AtomicBool>; 4] = core::array::from_fn(|_| Arc::new(AtomicBool::new(false)));
    let p = Probe {
        fired: flags[0].clone(),
        dropped_early: flags[1].clone(),
        dropped: flags[2].clone(),
        owner: thread::current().id(),
        dropped_on_owner: flags[3].clone(),
    };
    let [a, b, c, d] = flags;
    (p, a, b, c, d)
}

fn wait_for(flag: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !flag.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "not released within 10 s");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_in_flight_dropped_before_completion_releases_its_payload_after_it_on_the_releaser() {
    let _serial = serial();
    let (_counter, waker) = waker();
    for poll_first in [false, true] {
        let (probe, fired, early, dropped, on_owner) = probe();
        let (c, slot) = armed();
        let mut f = InFlight::new(c, probe);
        if poll_first {
            assert!(poll(&mut f, &waker).is_pending());
        }
        drop(f);
        thread::sleep(Duration::from_millis(20));
        assert!(!dropped.load(Ordering::SeqCst), "released before the work completed");
        fired.store(true, Ordering::SeqCst);
        fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
        wait_for(&dropped);
        assert!(!early.load(Ordering::SeqCst));
        assert!(!on_owner.load(Ordering::SeqCst), "released on the dropping thread or CUDA's");
        assert_eq!(slot.state(), SlotState::Free);
    }
}

#[test]
fn an_in_flight_dropped_after_completion_releases_on_the_releaser_and_one_awaited_gives_it_back() {
    let _serial = serial();
    let (_counter, waker) = waker();
    let (probe, fired, _, dropped, on_owner) = probe();
    let (c, slot) = armed();
    let f = InFlight::new(c, probe);
    fired.store(true, Ordering::SeqCst);
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    assert!(f.is_complete());
    drop(f);
    wait_for(&dropped);
    assert!(!on_owner.load(Ordering::SeqCst));
    // Awaited: the payload comes back, intact.
    let (c, slot) = armed();
    let mut f = InFlight::new(c, alloc::vec![1u8, 2, 3]);
    assert!(poll(&mut f, &waker).is_pending());
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    match poll(&mut f, &waker) {
        Poll::Ready(Ok(v)) => assert_eq!(v, [1, 2, 3]),
        other => panic!("expected the payload back, got {other:?}"),
    }
}

#[test]
fn a_panic_in_the_task_drops_the_in_flight_and_the_payload_still_waits_for_the_work() {
    let _serial = serial();
    let (probe, fired, early, dropped, _) = probe();
    let (c, slot) = armed();
    let f = InFlight::new(c, probe);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _held = f;
        panic!("a test panic in a task holding an InFlight");
    }));
    assert!(caught.is_err());
    assert!(!dropped.load(Ordering::SeqCst));
    fired.store(true, Ordering::SeqCst);
    fire_on_cuda_thread(slot, sys::cudaError::cudaSuccess);
    wait_for(&dropped);
    assert!(!early.load(Ordering::SeqCst));
}

#[test]
fn waiting_allocates_nothing_in_steady_state() {
    let _serial = serial();
    let (counter, waker) = waker();
    // Warm up: the slab and the free list grow to what is in flight at once.
    let warm: alloc::vec::Vec<_> = (0..100).map(|_| armed()).collect();
    for (_, slot) in &warm {
        slot.fire(sys::cudaError::cudaSuccess);
    }
    drop(warm);
    let before = allocations();
    for _ in 0..1000 {
        let (mut c, slot) = armed();
        assert!(poll(&mut c, &waker).is_pending());
        slot.fire(sys::cudaError::cudaSuccess);
        assert!(matches!(poll(&mut c, &waker), Poll::Ready(Ok(()))));
        let (c, slot) = armed();
        drop(c);
        slot.fire(sys::cudaError::cudaSuccess);
    }
    assert_eq!(allocations() - before, 0, "heap allocations waiting");
    assert_eq!(counter.0.load(Ordering::SeqCst), 1000);
}

/// Handing a slot to the poller never allocates, however many other threads' registrations the
/// queue holds at the time: the queue has room for every slot the slab has. Before, it grew with
/// the largest burst of registrations seen, and a wait that met a larger burst paid for the
/// growth (the GPU test `waiting_allocates_nothing` saw one allocation in 6,000 waits, while a
/// thousand waits of another test registered at once).
#[test]
fn registering_with_the_poller_never_allocates() {
    let _serial = serial();
    // The poller running takes the slots out of its queue (it lets go of slots without an
    // event), so that none of them is in the queue again when it is next armed.
    assert!(poller::ensure_started());
    // Grow the slab by a few chunks: every slot armed at once.
    let held: alloc::vec::Vec<_> = (0..200).map(|_| armed()).collect();
    assert!(
        poller::registration_capacity() >= slot::total(),
        "the poller's queue has room for {} registrations, the slab {} slots",
        poller::registration_capacity(),
        slot::total()
    );
    // All of them registered at once, from this thread: no allocation.
    let before = allocations();
    for (_, slot) in &held {
        poller::register(slot);
    }
    assert_eq!(allocations() - before, 0, "heap allocations registering 200 slots at once");
    // The slots carry no event: the poller lets go of them without freeing them, and nothing else
    // holds them. Their futures let go after a fire, freeing them.
    for (c, slot) in held {
        drop(c);
        slot.fire(sys::cudaError::cudaSuccess);
    }
}

/// A payload's drop may block (`cudaFreeHost` waits for the device): it runs on the releaser
/// thread, so that the poller's wakes of other futures go on meanwhile.
#[test]
fn payloads_are_released_on_the_releaser_thread_not_the_pollers() {
    let _serial = serial();
    assert!(poller::ensure_started());
    struct Named(Arc<std::sync::Mutex<Option<String>>>);
    impl Drop for Named {
        fn drop(&mut self) {
            let name = thread::current().name().map(str::to_owned);
            *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = name;
        }
    }
    let seen = Arc::new(std::sync::Mutex::new(None));
    poller::release_later(Box::new(Named(seen.clone())));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let name = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Some(name) = name {
            assert_eq!(name, "ordo-releaser");
            break;
        }
        assert!(Instant::now() < deadline, "not released within 10 s");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn the_poller_starts_once() {
    let _serial = serial();
    assert!(poller::ensure_started());
    assert!(poller::ensure_started());
}
