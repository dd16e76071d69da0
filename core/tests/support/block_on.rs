//! The smallest executor, for the tests of `ordo_cuda_core::future`: polls one future on the
//! calling thread and parks the thread while it is pending; its waker unparks the thread. The
//! waker is made once per thread ([`thread_waker`]) and reused, so that waiting allocates nothing
//! on the executor's side either.
#![allow(dead_code)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A waker that unparks the calling thread.
pub fn thread_waker() -> Waker {
    Waker::from(Arc::new(Unpark(std::thread::current())))
}

/// Runs `f` to completion on this thread with `waker` (one of [`thread_waker`]'s, of this thread).
pub fn block_on_with<F: Future>(waker: &Waker, f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Runs `f` to completion on this thread.
pub fn block_on<F: Future>(f: F) -> F::Output {
    block_on_with(&thread_waker(), f)
}

/// Polls `f` once with `waker`.
pub fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    std::pin::Pin::new(f).poll(&mut Context::from_waker(waker))
}
