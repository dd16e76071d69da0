//! The registry of live handles.
//!
//! A handle given to C is an opaque token, never an address: a serial number that is never reused,
//! shifted left with a tag in its low bits, cast to the handle's pointer type. ordo never
//! dereferences it. Each call looks the token up in one process-wide table and gets a counted
//! reference (`Arc`) to the object, or `ORDO_ERROR_INVALID_HANDLE` when the token is NULL, was
//! destroyed, was never made, or names an object of another kind. So a stale, double-destroyed,
//! forged or wrong-kind handle is a status, never undefined behaviour, and since serials are never
//! reused a stale handle cannot reach a newer object.
//!
//! The table's lock is held for the lookup, insertion or removal only: never across a CUDA call or
//! a callback. No object's call holds a lock across a callback either: a call that runs one marks
//! itself on its thread (`enter_call`), so that a callback re-entering the same handle gets
//! `ORDO_ERROR_HANDLE_BUSY` instead of recursing. Destroying a handle removes it from the table; the object itself is dropped once
//! the last call still using it (on another thread) has returned. The table's operations cannot
//! panic while holding the lock, and a poisoned lock is recovered (the map stays consistent).

use super::check::{non_null, write_out};
use super::context::InContext;
use super::status::{guard, Failure, OrdoStatus, Outcome, ORDO_ERROR_HANDLE_BUSY, ORDO_ERROR_INVALID_HANDLE};
use ordo_cuda_core::sync::lock;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

type Object = Arc<dyn Any + Send + Sync>;

static TABLE: Mutex<BTreeMap<usize, Object>> = Mutex::new(BTreeMap::new());
static NEXT_SERIAL: AtomicUsize = AtomicUsize::new(1);

/// Low bits of every token: odd, so no token is an aligned address of any object.
const TAG_BITS: u32 = 4;
const TAG: usize = 0b1011;

fn table() -> MutexGuard<'static, BTreeMap<usize, Object>> {
    lock(&TABLE)
}

fn invalid_handle() -> Failure {
    Failure(ORDO_ERROR_INVALID_HANDLE)
}

/// Registers `object` and returns its handle (a token, cast to the C handle type `H`).
pub(crate) fn register<T: Send + Sync + 'static, H>(object: T) -> Outcome<*mut H> {
    let serial = NEXT_SERIAL
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
            s.checked_add(1).filter(|&n| n.leading_zeros() >= TAG_BITS)
        })
        .map_err(|_| {
            super::status::refused(super::status::ORDO_ERROR_INVALID_ARGUMENT, None, "handle serial numbers exhausted")
        })?;
    let token = (serial << TAG_BITS) | TAG;
    let object: Object = Arc::new(object);
    table().insert(token, object);
    Ok(token as *mut H)
}

/// The live object of kind `T` behind `handle`, or `ORDO_ERROR_INVALID_HANDLE`.
pub(crate) fn get<T: Send + Sync + 'static, H>(handle: *mut H) -> Outcome<Arc<T>> {
    let object = table().get(&(handle as usize)).cloned().ok_or_else(invalid_handle)?;
    object.downcast::<T>().map_err(|_| invalid_handle())
}

/// The body of an export that makes a handle: `out` checked first (null, alignment), so that a
/// bad `out` costs no work; then `make`, and the object it makes registered and its handle written
/// to `out`, which is written on success only.
pub(crate) fn create<T: Send + Sync + 'static, H>(
    export: &'static str,
    out: *mut *mut H,
    make: impl FnOnce() -> Outcome<T>,
) -> OrdoStatus {
    guard(export, || {
        non_null(out.cast_const(), "out")?;
        let object = make()?;
        write_out(out, register(object)?, "out")
    })
}

/// Runs `f` on the object behind `handle`, one made in a context ([`InContext`]) that is still
/// alive: the lookup ([`get`]) and the context check written once. `ORDO_ERROR_INVALID_HANDLE`
/// for a handle that is not a live object of kind `T`; `cudaErrorContextIsDestroyed` once a
/// device reset destroyed its context.
pub(crate) fn with_live<T: Send + Sync + 'static, H, R>(
    handle: *mut H,
    f: impl FnOnce(&T) -> Outcome<R>,
) -> Outcome<R> {
    let object = get::<InContext<T>, H>(handle)?;
    f(object.get()?)
}

/// Removes the object of kind `T` behind `handle` from the table and returns it (to be dropped
/// by the caller, outside the lock). NULL, unknown handles and handles of another kind are left
/// alone: `None`.
pub(crate) fn remove<T: Send + Sync + 'static, H>(handle: *mut H) -> Option<Arc<T>> {
    let token = handle as usize;
    let mut table = table();
    if !table.get(&token).is_some_and(|o| o.is::<T>()) {
        return None;
    }
    let object = table.remove(&token)?;
    drop(table);
    object.downcast::<T>().ok()
}

thread_local! {
    /// Tokens of the handles whose call is running on the calling thread and has called out to a
    /// callback (a graph cache's body).
    static IN_CALL: core::cell::RefCell<Vec<usize>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// A call on one handle, marked as running on the calling thread until it drops. No lock: other
/// threads' calls on the handle run meanwhile.
pub(crate) struct CallMark {
    token: usize,
}

/// Marks a call on `handle` as running on the calling thread, refusing with
/// `ORDO_ERROR_HANDLE_BUSY` when one already runs there: a callback that called back into the
/// handle whose call runs it (a graph cache's body calling its own cache would otherwise recurse
/// without end, each call calling the body again).
///
/// From a thread's exit cleanup after this thread-local is gone (a C++ `thread_local` destructor
/// or a pthread key destructor that runs after Rust's), the re-entry cannot be tracked: such a
/// call is refused with `ORDO_ERROR_NOT_SUPPORTED` rather than run unguarded.
pub(crate) fn enter_call<H>(handle: *mut H) -> Outcome<CallMark> {
    let token = handle as usize;
    IN_CALL
        .try_with(|h| {
            let mut held = h.borrow_mut();
            if held.contains(&token) {
                return Err(Failure(ORDO_ERROR_HANDLE_BUSY));
            }
            held.push(token);
            Ok(CallMark { token })
        })
        .unwrap_or(Err(Failure(super::status::ORDO_ERROR_NOT_SUPPORTED)))
}

impl Drop for CallMark {
    fn drop(&mut self) {
        // Made only where the thread-local was alive; if it is gone by now, so is the record.
        let _ = IN_CALL.try_with(|h| {
            let mut held = h.borrow_mut();
            if let Some(i) = held.iter().rposition(|&t| t == self.token) {
                held.swap_remove(i);
            }
        });
    }
}

/// How many handles are live (for tests).
pub fn live_handles() -> usize {
    table().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A(u32);
    struct B;

    #[test]
    fn stale_unknown_and_wrong_kind_handles_are_refused() {
        let a: *mut u8 = register(A(7)).unwrap();
        let b: *mut u8 = register(B).unwrap();
        assert_ne!(a, b);
        assert_eq!(get::<A, u8>(a).unwrap().0, 7);
        assert_eq!(get::<A, u8>(b).err(), Some(invalid_handle()), "wrong kind");
        assert_eq!(get::<A, u8>(core::ptr::null_mut()).err(), Some(invalid_handle()));
        assert_eq!(get::<A, u8>(0x1000 as *mut u8).err(), Some(invalid_handle()), "never made");
        assert!(remove::<A, u8>(b).is_none(), "a handle of another kind is left alone");
        assert!(get::<B, u8>(b).is_ok());
        let held = get::<A, u8>(a).unwrap();
        assert!(remove::<A, u8>(a).is_some());
        assert!(remove::<A, u8>(a).is_none(), "double destroy is harmless");
        assert_eq!(get::<A, u8>(a).err(), Some(invalid_handle()), "stale");
        assert_eq!(held.0, 7, "a call in flight keeps its object alive");
        let c: *mut u8 = register(A(8)).unwrap();
        assert_ne!(c, a, "serials are never reused");
        assert!(remove::<B, u8>(b).is_some() && remove::<A, u8>(c).is_some());
        assert_eq!((a as usize) & ((1 << TAG_BITS) - 1), TAG);
    }

    #[test]
    fn a_call_reentered_on_its_thread_is_busy_and_other_threads_are_not_held() {
        let h = 0x51b as *mut u8;
        let first = enter_call(h).unwrap();
        assert_eq!(enter_call(h).err().map(|f| f.0), Some(ORDO_ERROR_HANDLE_BUSY));
        assert!(enter_call(0x61b as *mut u8).is_ok(), "another handle");
        // Another thread's call on the same handle runs at once: nothing is locked.
        let token = h as usize;
        let other = std::thread::spawn(move || enter_call(token as *mut u8).map(drop).is_ok());
        assert!(other.join().unwrap());
        drop(first);
        assert!(enter_call(h).is_ok(), "free again after the call");
    }
}
