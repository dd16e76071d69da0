//! NCCL groups: calls made between `ncclGroupStart` and `ncclGroupEnd` are launched together.

use super::error::{check, Success};
use super::Nccl;
use crate::function::call;
use core::cell::Cell;
use core::marker::PhantomData;
use ordo_cuda_core::Result;

thread_local! {
    /// How many of ordo's groups are open on this thread (NCCL's group depth, as far as ordo
    /// opened it): calls whose result NCCL hands out only when the group ends refuse to run inside one.
    static OPEN: Cell<usize> = const { Cell::new(0) };
}

/// Whether a [`Group`] is open on the calling thread (also one that was `mem::forget`ten: NCCL's
/// group then stays open too).
pub(crate) fn open_on_this_thread() -> bool {
    OPEN.with(|o| o.get() > 0)
}

/// An open NCCL group (`ncclGroupStart`), ended by [`Group::end`] or, on every other path out (an
/// early return, a panic), when dropped. Needed around point-to-point calls that must progress
/// together ([`Communicator::send`](super::Communicator::send) and
/// [`recv`](super::Communicator::recv) between two ranks), and around the calls on each of several
/// communicators of one process. Groups are per thread (not `Send`); they may nest.
#[must_use = "the group's calls are launched when it ends"]
pub struct Group<'a> {
    nccl: &'a Nccl,
    _per_thread: PhantomData<*const ()>,
}

impl<'a> Group<'a> {
    pub(crate) fn start(nccl: &'a Nccl) -> Result<Group<'a>> {
        let api = nccl.api();
        // SAFETY: no arguments.
        check(api, core::ptr::null_mut(), call!(unsafe { api.group_start() }), Success::Done)?;
        OPEN.with(|o| o.set(o.get().saturating_add(1)));
        Ok(Group { nccl, _per_thread: PhantomData })
    }

    /// Ends the group (`ncclGroupEnd`): its calls are enqueued on their streams. With a
    /// non-blocking communicator, `ncclInProgress` is success so far: poll
    /// [`Communicator::state`](super::Communicator::state) before the next call.
    pub fn end(self) -> Result<()> {
        let nccl = self.nccl;
        core::mem::forget(self);
        end(nccl)
    }
}

fn end(nccl: &Nccl) -> Result<()> {
    OPEN.with(|o| o.set(o.get().saturating_sub(1)));
    let api = nccl.api();
    // SAFETY: closes the group this value opened.
    check(api, core::ptr::null_mut(), call!(unsafe { api.group_end() }), Success::Started)
}

impl Drop for Group<'_> {
    /// Ends the group on a path that did not call [`Group::end`]; a failure is kept for
    /// [`take_drop_errors`](ordo_cuda_core::error::take_drop_errors).
    fn drop(&mut self) {
        if let Err(e) = end(self.nccl) {
            ordo_cuda_core::error::record_drop_error_value(e);
        }
    }
}
