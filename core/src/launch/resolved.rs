//! Each kernel's driver handle, resolved once for the process: a fixed table from a kernel's
//! address (the host stub a [`Kernel`](super::Kernel) holds) to its `CUkernel`
//! (`cudaGetKernel`), which the driver's `cuLaunchKernelEx` launches on any device and context
//! (the context is the stream's: cuda.h, `cuLaunchKernelEx`). The launch's hot path reads the
//! table: a hash of the address and one or two atomic loads, no lock, no allocation.
//!
//! - **Resolution** happens at a kernel's first launch through the driver path, with the calling
//!   thread's capture mode relaxed for the query (another thread's global-mode capture is not
//!   disturbed). The handle belongs to no context: the driver loads the kernel into a context at
//!   its first launch there, as it does for the runtime's own launches. A failed resolution
//!   sends the launch through the runtime, which reports its own error for an address that is no
//!   kernel. An address the runtime says is none of its stubs (a caller's own `cudaKernel_t`) is
//!   entered as such ([`RUNTIME`], at most a quarter of the table) and not asked about again; any
//!   other failure (no driver, a sticky error) is not remembered.
//! - **Kernels of a [`Library`](crate::library::Library)** are `CUkernel`s already: they are
//!   entered as themselves when taken from their library, so that their launches never ask.
//! - **Another copy of the CUDA runtime** ([`kernel_handle_with`]): a program linked with the
//!   static CUDA runtime beside a shared ordo (which loads `libcudart.so`) registers its kernels'
//!   stubs with its own runtime, which ordo's does not see. Its `cudaGetKernel`, passed in by the
//!   caller (ordo.h does it in every file that includes the CUDA runtime's header), is asked at
//!   the kernel's first launch, and the answer entered under the stub's address (and under the
//!   handle itself): later launches find it, whichever runtime registered the stub.
//! - **Full**: [`SLOTS`] entries, [`PROBES`] places tried for each; a kernel that finds no place
//!   is launched through the runtime, as before the table existed.
//! - **For the life of the process**: entries are never removed. A `CUkernel` stays valid while
//!   its module is loaded, which for a kernel linked into the program is the life of the program
//!   (a `cudaDeviceReset` destroys a context, not the runtime's context-independent modules:
//!   the GPU test `launch_after_reset` launches through the same handles after resets). The
//!   exception is a shared library holding kernels that is unloaded (`dlclose`) and another kernel
//!   then found at the same address: [`Kernel::launch`](super::Kernel::launch)'s contract rules
//!   it out, and [`Kernel::launch_runtime`](super::Kernel::launch_runtime) is the launch for such
//!   kernels.

use core::ffi::c_void;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;

/// Entries in the table (a power of two).
const SLOTS: usize = 1024;

/// Places tried for one kernel, from its hash on.
const PROBES: usize = 16;

/// One entry: a kernel's address and its `CUkernel`. The address is claimed first (null to the
/// address, a CAS), then the handle stored; a reader that finds the address with a null handle
/// (the claimant has not stored it yet) launches through the runtime this time.
struct Entry {
    address: AtomicPtr<c_void>,
    handle: AtomicPtr<c_void>,
}

static TABLE: [Entry; SLOTS] =
    [const { Entry { address: AtomicPtr::new(null_mut()), handle: AtomicPtr::new(null_mut()) } }; SLOTS];

/// Where `address`'s search starts (Fibonacci hashing of the address).
#[inline(always)]
fn home(address: *const c_void) -> usize {
    let hash = (address as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hash >> (64 - SLOTS.trailing_zeros())) as usize
}

/// What the table says of an address.
enum Found {
    /// Its handle.
    Handle(NonNull<c_void>),
    /// Not there, with a free entry on its path (`true`) or none left.
    Absent(bool),
    /// Being entered by another thread.
    Pending,
}

#[inline(always)]
fn find(address: *const c_void) -> Found {
    let start = home(address);
    for i in 0..PROBES {
        let entry = &TABLE[(start + i) & (SLOTS - 1)];
        // Acquire: the claimant's handle store (Release) is seen once its address is.
        let key = entry.address.load(Ordering::Acquire);
        if key.cast_const() == address {
            return match NonNull::new(entry.handle.load(Ordering::Acquire)) {
                Some(handle) => Found::Handle(handle),
                None => Found::Pending,
            };
        }
        if key.is_null() {
            return Found::Absent(true);
        }
    }
    Found::Absent(false)
}

/// The `CUkernel` of the kernel at `address` (a host stub, or a library's kernel entered with
/// [`remember`]), resolving it on first use; `None` when it cannot be resolved (not a kernel, no
/// driver) or has no place in the table: the caller launches through the runtime.
#[inline(always)]
pub(crate) fn kernel_handle(address: *const c_void) -> Option<NonNull<c_void>> {
    match find(address) {
        Found::Handle(handle) if is_runtime_marker(handle) => None,
        Found::Handle(handle) => Some(handle),
        Found::Pending => None,
        Found::Absent(room) => resolve(address, room, RUNTIME),
    }
}

/// As [`kernel_handle`], for a caller that can also ask the CUDA runtime that registered the stub
/// at `address`, which may be another copy than ordo's (`resolver`: that runtime's `cudaGetKernel`
/// of `address`, `None` when it fails). `resolver` is called only where the table has no handle
/// for `address` and no earlier resolver has failed for it: at a kernel's first launch (and, where
/// the table has no room left for `address`, or another thread is entering it at that moment, at
/// those launches). Its handle is entered under `address` and under itself; where it fails,
/// ordo's own runtime is asked, as [`kernel_handle`] does.
///
/// # Safety
/// - What `resolver` returns is the `CUkernel` of the kernel whose host stub (or handle) is
///   `address`, and stays valid while that kernel's code stays loaded at `address` (the entry
///   serves every later launch of `address` in the process, through this function or not).
#[inline(always)]
pub(crate) unsafe fn kernel_handle_with(
    address: *const c_void,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
) -> Option<NonNull<c_void>> {
    match find(address) {
        Found::Handle(handle) if handle == RUNTIME_ASKED => None,
        // SAFETY: the caller's contract on `resolver`.
        Found::Handle(handle) if handle == RUNTIME => unsafe { ask_after_runtime(address, resolver) },
        Found::Handle(handle) => Some(handle),
        // Another thread is entering `address` (its handle, or a marker): ask, enter nothing.
        Found::Pending => ask(resolver),
        // SAFETY: as above.
        Found::Absent(room) => unsafe { ask_first(address, room, resolver) },
    }
}

/// [`kernel_handle_with`] for an address the table does not hold: `resolver` first, then ordo's
/// own runtime; a handle is entered, and an address neither knows as a kernel is marked
/// [`RUNTIME_ASKED`].
///
/// # Safety
/// As [`kernel_handle_with`].
#[cold]
#[inline(never)]
unsafe fn ask_first(
    address: *const c_void,
    room: bool,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
) -> Option<NonNull<c_void>> {
    match ask(resolver) {
        Some(handle) => {
            if room {
                enter(address, handle);
            }
            remember(handle);
            Some(handle)
        }
        None => resolve(address, room, RUNTIME_ASKED),
    }
}

/// [`kernel_handle_with`] for an address ordo's runtime said is none of its kernels' stubs
/// ([`RUNTIME`]), with no resolver asked yet: asked now, once; the entry becomes the handle, or
/// [`RUNTIME_ASKED`].
///
/// # Safety
/// As [`kernel_handle_with`].
#[cold]
#[inline(never)]
unsafe fn ask_after_runtime(
    address: *const c_void,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
) -> Option<NonNull<c_void>> {
    let handle = ask(resolver);
    upgrade(address, handle.unwrap_or(RUNTIME_ASKED));
    if let Some(handle) = handle {
        remember(handle);
    }
    handle
}

/// Calls `resolver` with the calling thread's capture mode relaxed (as [`query`] is made).
#[cold]
#[inline(never)]
fn ask(resolver: impl FnOnce() -> Option<NonNull<c_void>>) -> Option<NonNull<c_void>> {
    relaxed(resolver)
}

/// Whether `handle` is one of the markers of an address launched through the runtime.
#[inline(always)]
fn is_runtime_marker(handle: NonNull<c_void>) -> bool {
    handle == RUNTIME || handle == RUNTIME_ASKED
}

/// The handle entered for an address the runtime said is none of its kernels' stubs
/// (`cudaErrorInvalidDeviceFunction`): launched through the runtime from then on, without asking
/// again. A `cudaKernel_t` that did not come through [`remember`] (the C ABI's caller's own, from
/// `cudaLibraryGetKernel`) is such an address: the runtime launches it, and the query was made
/// again at every launch (`ordo-measure` launching such handles measured 1.08x
/// `cudaLaunchKernelEx`). Never a real handle: no object lives at address 1.
const RUNTIME: NonNull<c_void> = NonNull::<u8>::dangling().cast();

/// As [`RUNTIME`], for an address that the caller's resolver ([`kernel_handle_with`]) did not know
/// either: not asked about again by anyone. Address 2, no object's either.
const RUNTIME_ASKED: NonNull<c_void> = NonNull::<u16>::dangling().cast();

/// Asks the runtime for the `CUkernel` of `address` and enters it, or enters `marker` (one of
/// [`RUNTIME`], [`RUNTIME_ASKED`]) when the runtime knows no kernel there. Other failures (no
/// driver, a sticky error) are not entered.
#[cold]
#[inline(never)]
fn resolve(address: *const c_void, room: bool, marker: NonNull<c_void>) -> Option<NonNull<c_void>> {
    let handle = query(address);
    if room {
        match handle {
            Ok(handle) => enter(address, handle),
            Err(sys::cudaError::cudaErrorInvalidDeviceFunction) if claim_runtime_entry() => enter(address, marker),
            Err(_) => {}
        }
    }
    handle.ok()
}

/// At most this many entries hold [`RUNTIME`]: addresses that are no stub (a C caller's
/// `cudaKernel_t`s, which a JIT may make without end) never take more than a quarter of the table
/// from the kernels that have a handle.
const RUNTIME_ENTRIES: usize = SLOTS / 4;

static RUNTIME_ENTERED: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Takes one of the [`RUNTIME_ENTRIES`]; `false` when none is left (the address is then asked
/// about at each launch, as before it could be entered).
fn claim_runtime_entry() -> bool {
    RUNTIME_ENTERED
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < RUNTIME_ENTRIES).then_some(n + 1))
        .is_ok()
}

/// `f()` with the calling thread's capture mode relaxed, then put back.
fn relaxed<T>(f: impl FnOnce() -> T) -> T {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable; restored below.
    let exchanged = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } == sys::cudaError::cudaSuccess;
    let out = f();
    if exchanged {
        // SAFETY: puts back the mode the exchange above returned.
        unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    }
    out
}

/// `cudaGetKernel(address)`, with the calling thread's capture mode relaxed for the query; a
/// failure's error is not left as the thread's last error unless it is sticky.
fn query(address: *const c_void) -> Result<NonNull<c_void>, sys::cudaError_t> {
    let mut kernel: sys::cudaKernel_t = null_mut();
    // SAFETY: `kernel` is writable; the runtime looks `address` up among the kernels it knows and
    // refuses one it does not (`cudaErrorInvalidDeviceFunction`).
    let code = relaxed(|| unsafe { sys::cudaGetKernel(&mut kernel, address) });
    if code != sys::cudaError::cudaSuccess {
        if !crate::error::is_sticky_code(code) {
            // SAFETY: no arguments; clears the non-sticky error this query left.
            unsafe { sys::cudaGetLastError() };
        }
        return Err(code);
    }
    NonNull::new(kernel.cast::<c_void>()).ok_or(sys::cudaError::cudaErrorUnknown)
}

/// Enters `handle` for `address` at the first free entry of the entries [`find`] looks at;
/// gives up when none is free. Two threads entering the same address at once enter it once (the
/// second sees the first's claim).
fn enter(address: *const c_void, handle: NonNull<c_void>) {
    let start = home(address);
    for i in 0..PROBES {
        let entry = &TABLE[(start + i) & (SLOTS - 1)];
        match entry.address.compare_exchange(null_mut(), address.cast_mut(), Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                entry.handle.store(handle.as_ptr(), Ordering::Release);
                return;
            }
            Err(key) if key.cast_const() == address => return,
            Err(_) => {}
        }
    }
}

/// Enters a kernel's handle (a `cudaKernel_t` is a `CUkernel`) as its own, so that a launch of the
/// handle goes through the driver without asking the runtime: a library's kernel, for a
/// [`Kernel`](super::Kernel) made from it, and a handle another runtime gave
/// ([`kernel_handle_with`]). A handle CUDA later gives to another library's kernel stays correct:
/// it is entered as itself.
pub(crate) fn remember(kernel: NonNull<c_void>) {
    match find(kernel.as_ptr()) {
        Found::Absent(true) => enter(kernel.as_ptr(), kernel),
        // Launched before as an address the runtime does not know as a stub (a caller's own
        // `cudaKernel_t`): it is this kernel, which is its own handle.
        Found::Handle(handle) if is_runtime_marker(handle) => upgrade(kernel.as_ptr(), kernel),
        _ => {}
    }
}

/// Replaces the marker ([`RUNTIME`] or [`RUNTIME_ASKED`]) entered for `address` by `handle` (a
/// handle, or [`RUNTIME_ASKED`]). An entry that holds a handle is left as it is.
fn upgrade(address: *const c_void, handle: NonNull<c_void>) {
    let start = home(address);
    for i in 0..PROBES {
        let entry = &TABLE[(start + i) & (SLOTS - 1)];
        if entry.address.load(Ordering::Acquire).cast_const() == address {
            for marker in [RUNTIME, RUNTIME_ASKED] {
                if marker != handle
                    && entry
                        .handle
                        .compare_exchange(marker.as_ptr(), handle.as_ptr(), Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    return;
                }
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses no real kernel has (the table is shared with the rest of the tests).
    fn fake(n: usize) -> NonNull<c_void> {
        NonNull::new((0x7000_0000_0000_usize + n * 0x1000) as *mut c_void).unwrap()
    }

    #[test]
    fn an_entered_kernel_is_found_and_a_full_path_says_absent() {
        for n in 0..64 {
            remember(fake(n));
        }
        for n in 0..64 {
            assert!(matches!(find(fake(n).as_ptr()), Found::Handle(h) if h == fake(n)), "{n}");
        }
        // Entered twice: one entry.
        remember(fake(3));
        let copies = TABLE.iter().filter(|e| e.address.load(Ordering::Acquire) == fake(3).as_ptr()).count();
        assert_eq!(copies, 1);
        // Addresses that all start at one place: PROBES of them fit, the rest are absent with no
        // place (launched through the runtime).
        let same_home: alloc::vec::Vec<NonNull<c_void>> =
            (0x10_0000..0x100_0000usize).map(fake).filter(|a| home(a.as_ptr()) == 17).take(PROBES + 4).collect();
        assert_eq!(same_home.len(), PROBES + 4);
        for &a in &same_home {
            remember(a);
        }
        let entered = same_home.iter().filter(|a| matches!(find(a.as_ptr()), Found::Handle(_))).count();
        assert!(entered <= PROBES, "{entered}");
        assert!(same_home.iter().any(|a| matches!(find(a.as_ptr()), Found::Absent(false))));
    }

    /// An address that is no kernel gets no handle, every time: without a driver nothing is entered
    /// (the query may succeed later); where the runtime says it is none of its kernels, it is
    /// entered as launched through the runtime, and not asked about again.
    #[test]
    fn an_address_that_is_no_kernel_gets_no_handle() {
        static NOT_A_KERNEL: u8 = 0;
        let address = core::ptr::addr_of!(NOT_A_KERNEL).cast::<c_void>();
        assert_eq!(kernel_handle(address), None);
        match find(address) {
            Found::Absent(true) => {}
            Found::Handle(h) => assert_eq!(h, RUNTIME, "entered only as a runtime launch"),
            _ => panic!("neither absent nor entered for the runtime"),
        }
        assert_eq!(kernel_handle(address), None, "the second time too");
    }

    /// The runtime marker is no handle `remember` or the runtime could give; a library kernel
    /// launched first as an unknown address gets its own handle once remembered.
    #[test]
    fn the_runtime_marker_is_never_a_handle() {
        assert_eq!(RUNTIME.as_ptr() as usize, 1);
        assert_eq!(RUNTIME_ASKED.as_ptr() as usize, 2);
        remember(fake(900));
        assert_eq!(kernel_handle(fake(900).as_ptr()), Some(fake(900)));
        enter(fake(901).as_ptr(), RUNTIME);
        assert_eq!(kernel_handle(fake(901).as_ptr()), None, "launched through the runtime");
        remember(fake(901));
        assert_eq!(kernel_handle(fake(901).as_ptr()), Some(fake(901)), "its own handle once remembered");
    }

    /// A resolver is asked at a kernel's first launch only; its handle is entered under the stub
    /// and under itself, and the plain lookup finds it too.
    #[test]
    fn a_resolvers_handle_is_asked_once_and_entered_under_the_stub_and_itself() {
        let (stub, handle) = (fake(910), fake(911));
        let mut asked = 0;
        for _ in 0..3 {
            // SAFETY: fake addresses, never launched.
            let got = unsafe {
                kernel_handle_with(stub.as_ptr(), || {
                    asked += 1;
                    Some(handle)
                })
            };
            assert_eq!(got, Some(handle));
        }
        assert_eq!(asked, 1);
        assert_eq!(kernel_handle(stub.as_ptr()), Some(handle), "the plain lookup finds the stub");
        assert_eq!(kernel_handle(handle.as_ptr()), Some(handle), "and the handle, as its own");
    }

    /// An address ordo's runtime marked as none of its stubs ([`RUNTIME`], a plain launch before)
    /// is asked about once more, with the resolver: its handle replaces the marker; a resolver that
    /// fails leaves [`RUNTIME_ASKED`], which no resolver is asked about again.
    #[test]
    fn a_runtime_marker_is_asked_about_once_with_a_resolver() {
        let (stub, handle) = (fake(920), fake(921));
        enter(stub.as_ptr(), RUNTIME);
        assert_eq!(kernel_handle(stub.as_ptr()), None);
        // SAFETY: fake addresses, never launched.
        assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), || Some(handle)) }, Some(handle));
        assert_eq!(kernel_handle(stub.as_ptr()), Some(handle));

        let refused = fake(922);
        enter(refused.as_ptr(), RUNTIME);
        let mut asked = 0;
        for _ in 0..3 {
            // SAFETY: as above.
            let got = unsafe {
                kernel_handle_with(refused.as_ptr(), || {
                    asked += 1;
                    None
                })
            };
            assert_eq!(got, None);
        }
        assert_eq!(asked, 1);
        assert!(matches!(find(refused.as_ptr()), Found::Handle(h) if h == RUNTIME_ASKED));
        assert_eq!(kernel_handle(refused.as_ptr()), None, "launched through the runtime");
        // A library's handle entered later is its own, marker or not.
        remember(refused);
        assert_eq!(kernel_handle(refused.as_ptr()), Some(refused));
    }

    /// A resolver that fails for an address that is no kernel: `None`, and where ordo's runtime
    /// answered (a driver is there) the address is marked, so that no one asks again.
    #[test]
    fn a_failing_resolver_falls_back_to_ordos_runtime() {
        static NOT_A_KERNEL: u8 = 0;
        let address = core::ptr::addr_of!(NOT_A_KERNEL).cast::<c_void>();
        let mut asked = 0;
        for _ in 0..3 {
            // SAFETY: a resolver that finds nothing; nothing is launched.
            let got = unsafe {
                kernel_handle_with(address, || {
                    asked += 1;
                    None
                })
            };
            assert_eq!(got, None);
        }
        match find(address) {
            // No driver here: nothing entered, asked at each call (every launch fails anyway).
            Found::Absent(true) => assert_eq!(asked, 3),
            Found::Handle(h) => assert!(h == RUNTIME_ASKED && asked == 1, "{h:?} after {asked} asks"),
            _ => panic!("neither absent nor marked"),
        }
    }

    /// While another thread enters an address (claimed, no handle yet), the resolver's answer is
    /// used and not entered.
    #[test]
    fn a_pending_entry_is_resolved_without_entering() {
        let (stub, handle) = (fake(930), fake(931));
        let start = home(stub.as_ptr());
        let slot = (0..PROBES)
            .map(|i| &TABLE[(start + i) & (SLOTS - 1)])
            .find(|e| {
                e.address.compare_exchange(null_mut(), stub.as_ptr(), Ordering::AcqRel, Ordering::Acquire).is_ok()
            })
            .unwrap();
        // SAFETY: fake addresses, never launched.
        assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), || Some(handle)) }, Some(handle));
        assert!(slot.handle.load(Ordering::Acquire).is_null(), "the claimant's entry is left to it");
        slot.handle.store(handle.as_ptr(), Ordering::Release);
        // SAFETY: as above.
        assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), || panic!("asked again")) }, Some(handle));
    }

    /// Runtime entries are capped: the kernels with a handle keep three quarters of the table.
    #[test]
    fn runtime_entries_are_capped() {
        let mut claimed = 0;
        while claim_runtime_entry() {
            claimed += 1;
            assert!(claimed <= RUNTIME_ENTRIES);
        }
        assert!(!claim_runtime_entry());
        assert!(RUNTIME_ENTERED.load(Ordering::Relaxed) <= RUNTIME_ENTRIES);
    }
}
