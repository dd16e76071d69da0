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
//!   entered as such ([`RUNTIME`], at most a quarter of the table) and not asked about again by a
//!   plain lookup; any other failure (no driver, a sticky error) is not remembered.
//! - **Kernels of a [`Library`](crate::library::Library)** are `CUkernel`s already: they are
//!   entered as themselves when taken from their library, so that their launches never ask.
//! - **Another copy of the CUDA runtime** ([`kernel_handle_with`]): a program linked with the
//!   static CUDA runtime beside a shared ordo (which loads `libcudart.so`) registers its kernels'
//!   stubs with its own runtime, which ordo's does not see. Its `cudaGetKernel`, passed in by the
//!   caller (ordo.h does it in every file that includes the CUDA runtime's header), is asked at
//!   the kernel's first launch, and the answer entered under the stub's address (and under the
//!   handle itself): later launches find it, whichever runtime registered the stub. A resolver
//!   that fails (the address is no kernel of its runtime either) is remembered for the address
//!   ([`REFUSED`], by the key the caller gives it) and not asked again; a call with another
//!   resolver is: the stub of a library with its own static runtime, launched first from a file
//!   of the program (whose runtime does not know it), still resolves from the library's file.
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
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
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
        Found::Handle(handle) if handle == RUNTIME => None,
        Found::Handle(handle) => Some(handle),
        Found::Pending => None,
        Found::Absent(room) => resolve(address, room, query),
    }
}

/// As [`kernel_handle`], for a caller that can also ask the CUDA runtime that registered the stub
/// at `address`, which may be another copy than ordo's (`resolver`: that runtime's `cudaGetKernel`
/// of `address`, `None` when it fails; `key`: which resolver it is, the same for every call that
/// passes the same one, such as the address of the function it calls).
///
/// `resolver` is called only where the table has no handle for `address`: at a kernel's first
/// launch; then, where it failed there, only by a call whose `key` is not the one of the last
/// resolver that failed for `address` (a null `key` is never remembered: asked each time); and
/// where the table has no room left for `address`, another thread is entering it at that moment,
/// or ordo's own runtime could not answer (no driver, a sticky error), at those launches. Its
/// handle is entered under `address` and under itself; where it fails, ordo's own runtime is
/// asked, as [`kernel_handle`] does, and where that says `address` is none of its kernels, the
/// address is entered as launched through the runtime ([`RUNTIME`]) and `key` remembered for it
/// ([`REFUSED`]).
///
/// # Safety
/// - What `resolver` returns is the `CUkernel` of the kernel whose host stub (or handle) is
///   `address`, and stays valid while that kernel's code stays loaded at `address` (the entry
///   serves every later launch of `address` in the process, through this function or not).
#[inline(always)]
pub(crate) unsafe fn kernel_handle_with(
    address: *const c_void,
    key: *const c_void,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
) -> Option<NonNull<c_void>> {
    // SAFETY: the caller's contract.
    unsafe { handle_with(address, key, resolver, query) }
}

/// [`kernel_handle_with`], with `runtime` as ordo's own runtime's `cudaGetKernel` ([`query`];
/// the tests pass their own, to stand for a runtime that answers without a driver).
///
/// # Safety
/// As [`kernel_handle_with`].
#[inline(always)]
unsafe fn handle_with(
    address: *const c_void,
    key: *const c_void,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
    runtime: impl FnOnce(*const c_void) -> Result<NonNull<c_void>, sys::cudaError_t>,
) -> Option<NonNull<c_void>> {
    match find(address) {
        // SAFETY: the caller's contract on `resolver`.
        Found::Handle(handle) if handle == RUNTIME => unsafe { ask_after_runtime(address, key, resolver) },
        Found::Handle(handle) => Some(handle),
        // Another thread is entering `address` (its handle, or the marker): ask, enter nothing.
        Found::Pending => ask(resolver),
        // SAFETY: as above.
        Found::Absent(room) => unsafe { ask_first(address, key, room, resolver, runtime) },
    }
}

/// [`kernel_handle_with`] for an address the table does not hold: `resolver` first, then ordo's
/// own runtime (`runtime`); a handle is entered, and an address neither knows as a kernel is
/// marked [`RUNTIME`], with `key` as the resolver that failed for it.
///
/// # Safety
/// As [`kernel_handle_with`].
#[cold]
#[inline(never)]
unsafe fn ask_first(
    address: *const c_void,
    key: *const c_void,
    room: bool,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
    runtime: impl FnOnce(*const c_void) -> Result<NonNull<c_void>, sys::cudaError_t>,
) -> Option<NonNull<c_void>> {
    match ask(resolver) {
        Some(handle) => {
            if room {
                enter(address, handle);
            }
            remember(handle);
            Some(handle)
        }
        None => {
            let handle = resolve(address, room, runtime);
            if handle.is_none() {
                refused(address, key);
            }
            handle
        }
    }
}

/// [`kernel_handle_with`] for an address ordo's runtime said is none of its kernels' stubs
/// ([`RUNTIME`]): `resolver` is asked unless `key` is the last resolver that failed for
/// `address`; the entry becomes its handle, or `key` is remembered as failing.
///
/// # Safety
/// As [`kernel_handle_with`].
#[cold]
#[inline(never)]
unsafe fn ask_after_runtime(
    address: *const c_void,
    key: *const c_void,
    resolver: impl FnOnce() -> Option<NonNull<c_void>>,
) -> Option<NonNull<c_void>> {
    let slot = slot_of(address);
    if !key.is_null() && slot.is_some_and(|s| REFUSED[s].load(Ordering::Relaxed) == key as usize) {
        return None;
    }
    let handle = ask(resolver);
    match handle {
        Some(handle) => {
            upgrade(address, handle);
            remember(handle);
        }
        None => refused(address, key),
    }
    handle
}

/// Remembers `key` as the last resolver that failed for `address`, where the table holds
/// `address` as launched through the runtime ([`RUNTIME`]); otherwise (not entered, or a handle)
/// nothing.
fn refused(address: *const c_void, key: *const c_void) {
    if key.is_null() {
        return;
    }
    if let Some(slot) = slot_of(address) {
        if TABLE[slot].handle.load(Ordering::Acquire) == RUNTIME.as_ptr() {
            REFUSED[slot].store(key as usize, Ordering::Relaxed);
        }
    }
}

/// Calls `resolver` with the calling thread's capture mode relaxed (as [`query`] is made).
#[cold]
#[inline(never)]
fn ask(resolver: impl FnOnce() -> Option<NonNull<c_void>>) -> Option<NonNull<c_void>> {
    relaxed(resolver)
}

/// The handle entered for an address the runtime said is none of its kernels' stubs
/// (`cudaErrorInvalidDeviceFunction`): launched through the runtime from then on, without asking
/// ordo's runtime again. A `cudaKernel_t` that did not come through [`remember`] (the C ABI's
/// caller's own, from `cudaLibraryGetKernel`) is such an address: the runtime launches it, and the
/// query was made again at every launch (`ordo-measure` launching such handles measured 1.08x
/// `cudaLaunchKernelEx`). A caller's resolver is still asked about it ([`kernel_handle_with`]),
/// except the last one that failed for it ([`REFUSED`]). Never a real handle: no object lives at
/// address 1.
const RUNTIME: NonNull<c_void> = NonNull::<u8>::dangling().cast();

/// For each entry of [`TABLE`] that holds [`RUNTIME`], the key of the last resolver that failed
/// for its address ([`kernel_handle_with`]; 0 for none), which is not asked about it again. Read
/// and written off the hot path only (where the entry is [`RUNTIME`]); a stale read costs one more
/// question to a resolver, nothing else.
static REFUSED: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// Asks `runtime` (ordo's runtime's `cudaGetKernel`: [`query`]) for the `CUkernel` of `address`
/// and enters it, or enters [`RUNTIME`] when the runtime knows no kernel there. Other failures
/// (no driver, a sticky error) are not entered.
#[cold]
#[inline(never)]
fn resolve(
    address: *const c_void,
    room: bool,
    runtime: impl FnOnce(*const c_void) -> Result<NonNull<c_void>, sys::cudaError_t>,
) -> Option<NonNull<c_void>> {
    let handle = runtime(address);
    if room {
        match handle {
            Ok(handle) => enter(address, handle),
            Err(sys::cudaError::cudaErrorInvalidDeviceFunction) if claim_runtime_entry() => enter(address, RUNTIME),
            Err(_) => {}
        }
    }
    handle.ok()
}

/// At most this many entries hold [`RUNTIME`]: addresses that are no stub (a C caller's
/// `cudaKernel_t`s, which a JIT may make without end) never take more than a quarter of the table
/// from the kernels that have a handle.
const RUNTIME_ENTRIES: usize = SLOTS / 4;

static RUNTIME_ENTERED: AtomicUsize = AtomicUsize::new(0);

/// Takes one of the [`RUNTIME_ENTRIES`]; `false` when none is left (the address is then asked
/// about at each launch, as before it could be entered).
fn claim_runtime_entry() -> bool {
    claim(&RUNTIME_ENTERED)
}

/// Takes one of the [`RUNTIME_ENTRIES`] that `entered` counts.
fn claim(entered: &AtomicUsize) -> bool {
    entered.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < RUNTIME_ENTRIES).then_some(n + 1)).is_ok()
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
/// failure's error is not left as the thread's last error unless it is sticky, or an error was
/// pending there before the query: the failure has then replaced it (the runtime has no call to
/// put it back), and clearing it would leave the caller's error unreported (ordo.h's resolver,
/// asked before this query in a process of one runtime, keeps it pending so too).
fn query(address: *const c_void) -> Result<NonNull<c_void>, sys::cudaError_t> {
    let mut kernel: sys::cudaKernel_t = null_mut();
    // SAFETY: no arguments; reads the thread's last error without clearing it.
    let pending = unsafe { sys::cudaPeekAtLastError() };
    // SAFETY: `kernel` is writable; the runtime looks `address` up among the kernels it knows and
    // refuses one it does not (`cudaErrorInvalidDeviceFunction`).
    let code = relaxed(|| unsafe { sys::cudaGetKernel(&mut kernel, address) });
    if code != sys::cudaError::cudaSuccess {
        if !crate::error::is_sticky_code(code) && pending == sys::cudaError::cudaSuccess {
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
        Found::Handle(handle) if handle == RUNTIME => upgrade(kernel.as_ptr(), kernel),
        _ => {}
    }
}

/// The index in [`TABLE`] of the entry that holds `address`, if one does.
fn slot_of(address: *const c_void) -> Option<usize> {
    let start = home(address);
    (0..PROBES)
        .map(|i| (start + i) & (SLOTS - 1))
        .find(|&slot| TABLE[slot].address.load(Ordering::Acquire).cast_const() == address)
}

/// Replaces the marker ([`RUNTIME`]) entered for `address` by `handle`. An entry that holds a
/// handle is left as it is.
fn upgrade(address: *const c_void, handle: NonNull<c_void>) {
    if let Some(slot) = slot_of(address) {
        let _ =
            TABLE[slot].handle.compare_exchange(RUNTIME.as_ptr(), handle.as_ptr(), Ordering::AcqRel, Ordering::Acquire);
    }
}

#[cfg(test)]
mod tests;
