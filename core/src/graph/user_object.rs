//! Host state owned by graphs (CUDA user objects, `cudaUserObjectCreate`): a value a graph's work
//! needs at every replay, freed by CUDA once the last graph and executable graph holding it is
//! destroyed and their launches have completed. CUDA drops it on a thread of its own, as CUDA
//! callback code ([`callback`](crate::callback)).

use crate::error::Result;
use alloc::boxed::Box;
use core::ffi::c_void;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// Gives `value` to `graph`: a new user object owns it and `graph` holds its only reference
/// (`cudaGraphRetainUserObject` with `cudaGraphUserObjectMove`). Graphs cloned or instantiated
/// from `graph`, and executable graphs updated with it, take references of their own; CUDA drops
/// the value, on an internal thread, once the last reference is released and the launches using
/// it have completed. Returns the value's address, valid as long as `graph` or anything holding a
/// reference lives.
///
/// On an error the value is dropped (here, or by CUDA on its internal thread when the user object
/// was made but could not be given to the graph).
///
/// # Safety
/// `graph` is a live graph (a capture's graph from `cudaStreamGetCaptureInfo` counts, while the
/// capture is open).
pub(crate) unsafe fn give_to_graph<T: Send + 'static>(
    graph: NonNull<sys::CUgraph_st>,
    value: Box<T>,
) -> Result<NonNull<T>> {
    let data = Box::into_raw(value);
    let mut object: sys::cudaUserObject_t = core::ptr::null_mut();
    // SAFETY: `object` is writable; `destroy::<T>` takes back the box `data` came from, once.
    let created = cuda_call!(unsafe {
        sys::cudaUserObjectCreate(
            &mut object,
            data.cast(),
            Some(destroy::<T>),
            1,
            sys::cudaUserObjectFlags::cudaUserObjectNoDestructorSync.0,
        )
    });
    if let Err(e) = created {
        // SAFETY: CUDA did not take `data`: it is still this function's box.
        drop(unsafe { Box::from_raw(data) });
        return Err(e);
    }
    // SAFETY: live handles; the calling thread's one reference moves to the graph.
    let retained = cuda_call!(unsafe {
        sys::cudaGraphRetainUserObject(
            graph.as_ptr(),
            object,
            1,
            sys::cudaUserObjectRetainFlags::cudaGraphUserObjectMove.0,
        )
    });
    if let Err(e) = retained {
        // SAFETY: the calling thread still holds its one reference; releasing it runs `destroy`.
        let code = unsafe { sys::cudaUserObjectRelease(object, 1) };
        crate::error::record_drop_error(code, "cudaUserObjectRelease");
        return Err(e);
    }
    // SAFETY: from `Box::into_raw`, so not null.
    Ok(unsafe { NonNull::new_unchecked(data) })
}

/// The user object's destructor: drops the value on CUDA's internal thread, marked as a CUDA
/// callback (a panic is caught and counted, see [`take_host_fn_panics`]; what the value frees
/// through CUDA is deferred, see [`free_deferred`]).
///
/// [`take_host_fn_panics`]: crate::host_fn::take_host_fn_panics
/// [`free_deferred`]: crate::staging::free_deferred
unsafe extern "C" fn destroy<T>(data: *mut c_void) {
    crate::callback::run_callback(|| {
        // SAFETY: the box given to `cudaUserObjectCreate` by `give_to_graph`; CUDA calls the
        // destructor once.
        drop(unsafe { Box::from_raw(data.cast::<T>()) });
    });
}
