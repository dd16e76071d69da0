//! What the example servers share, for any executor: a pool of *lanes* (a stream and the
//! buffers of one request), a request's GPU step as an `async fn`, and the figures' watcher.
//!
//! A request takes a lane, copies its input to the device, overwrites a part of it there
//! (`memset`), and copies the result back, awaiting each step: no thread blocks on the GPU. If
//! the request is cancelled mid-step, its pinned buffers are inside the dropped future: ordo
//! releases them once the GPU is done with them, and the lane makes new ones for its next
//! request (its device buffer stays: it is only ever used in the order of the lane's stream).

use ordo_cuda::{future, HostAllocFlags, PinnedBuffer, Result, SharedStreamBuffer, Stream};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// Elements of a request.
pub const LEN: usize = 16 * 1024;
/// The elements a request's `memset` overwrites, from the start.
pub const SET: usize = 1024;

/// A stream and one request's buffers.
pub struct Lane {
    pub stream: Arc<Stream>,
    device: SharedStreamBuffer<u32>,
    input: Option<PinnedBuffer<u32>>,
    output: Option<PinnedBuffer<u32>>,
    /// Pinned buffers made again after a cancelled request took them along.
    pub remade: usize,
}

impl Lane {
    fn new() -> Result<Lane> {
        let stream = Arc::new(Stream::new()?);
        let device = SharedStreamBuffer::alloc_async(LEN, &stream)?;
        Ok(Lane { stream, device, input: None, output: None, remade: 0 })
    }

    fn pinned(slot: &mut Option<PinnedBuffer<u32>>, remade: &mut usize) -> Result<PinnedBuffer<u32>> {
        match slot.take() {
            Some(buffer) => Ok(buffer),
            None => {
                *remade += 1;
                PinnedBuffer::zeroed(LEN, HostAllocFlags::empty())
            }
        }
    }
}

struct Pool {
    lanes: Vec<Lane>,
    /// Tasks waiting for a lane, by ticket, oldest first.
    waiting: VecDeque<(u64, Waker)>,
    next_ticket: u64,
}

impl Pool {
    /// Wakes the oldest waiting task, if a lane is free.
    fn wake_next(&mut self) -> Option<Waker> {
        if self.lanes.is_empty() {
            return None;
        }
        self.waiting.pop_front().map(|(_, w)| w)
    }
}

/// A pool of lanes; [`take`](Self::take) waits (asynchronously) for a free one.
#[derive(Clone)]
pub struct LanePool(Arc<Mutex<Pool>>);

impl LanePool {
    /// `lanes` lanes, each with its own stream, on the current device.
    pub fn new(lanes: usize) -> Result<LanePool> {
        let lanes = (0..lanes).map(|_| Lane::new()).collect::<Result<Vec<_>>>()?;
        Ok(LanePool(Arc::new(Mutex::new(Pool { lanes, waiting: VecDeque::new(), next_ticket: 0 }))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A free lane, once there is one; back in the pool when the guard drops.
    pub fn take(&self) -> Take<'_> {
        Take { pool: self, ticket: None }
    }

    /// Pinned buffers made again, over all lanes (after cancelled requests). Counts the lanes
    /// in the pool now (all of them, once every request is over).
    pub fn remade(&self) -> usize {
        self.lock().lanes.iter().map(|l| l.remade).sum()
    }
}

/// The future of [`LanePool::take`]. Dropped while it waits, it leaves the queue (and passes a
/// wake it may have had on to the next task), so that a cancelled request never strands a lane.
pub struct Take<'a> {
    pool: &'a LanePool,
    ticket: Option<u64>,
}

impl Future for Take<'_> {
    type Output = LaneGuard;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LaneGuard> {
        let pool_ref = self.pool;
        let mut pool = pool_ref.lock();
        if let Some(lane) = pool.lanes.pop() {
            if let Some(ticket) = self.ticket.take() {
                pool.waiting.retain(|(t, _)| *t != ticket);
            }
            return Poll::Ready(LaneGuard { lane: Some(lane), pool: pool_ref.clone() });
        }
        let ticket = match self.ticket {
            Some(ticket) => ticket,
            None => {
                pool.next_ticket += 1;
                pool.next_ticket
            }
        };
        self.ticket = Some(ticket);
        match pool.waiting.iter_mut().find(|(t, _)| *t == ticket) {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => pool.waiting.push_back((ticket, cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl Drop for Take<'_> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket else { return };
        let mut pool = self.pool.lock();
        pool.waiting.retain(|(t, _)| *t != ticket);
        let next = pool.wake_next();
        drop(pool);
        if let Some(waker) = next {
            waker.wake();
        }
    }
}

/// A lane taken from the pool.
pub struct LaneGuard {
    lane: Option<Lane>,
    pool: LanePool,
}

impl Drop for LaneGuard {
    fn drop(&mut self) {
        if let Some(lane) = self.lane.take() {
            let mut pool = self.pool.lock();
            pool.lanes.push(lane);
            let next = pool.wake_next();
            drop(pool);
            if let Some(waker) = next {
                waker.wake();
            }
        }
    }
}

/// The value request `id` puts in each byte it sets.
pub fn set_byte(id: u64) -> u8 {
    (id % 251) as u8
}

/// Request `id`'s input.
pub fn input_of(id: u64, i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761) ^ id as u32
}

/// One request: input to the device, a memset there, the result back; checks it. Every step
/// is awaited on the lane's stream; nothing blocks.
pub async fn serve(pool: &LanePool, id: u64) -> Result<()> {
    let mut guard = pool.take().await;
    let Some(lane) = guard.lane.as_mut() else { return Ok(()) };
    let s = lane.stream.as_stream();
    let mut input = Lane::pinned(&mut lane.input, &mut lane.remade)?;
    for (i, x) in input.iter_mut().enumerate() {
        *x = input_of(id, i);
    }
    lane.input = Some(future::copy::h2d(lane.device.as_mut_slice(), input, s)?.await?);
    let set = lane.device.slice_mut(..SET)?;
    future::copy::memset(set, set_byte(id), s)?.await?;
    let output = Lane::pinned(&mut lane.output, &mut lane.remade)?;
    let output = future::copy::d2h(output, lane.device.as_slice(), s)?.await?;
    let byte = u32::from_ne_bytes([set_byte(id); 4]);
    let good = output.iter().enumerate().all(|(i, &x)| x == if i < SET { byte } else { input_of(id, i) });
    lane.output = Some(output);
    if !good {
        return Err(ordo_cuda::Error::invalid("serve", "a request read back wrong data"));
    }
    Ok(())
}

/// Polls `f` once with a waker that does nothing, then drops it: a request cancelled at its
/// first await, whatever that was waiting for.
pub fn cancel_after_one_poll<F: Future>(f: F) {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut f = std::pin::pin!(f);
    let _ = Pin::as_mut(&mut f).poll(&mut Context::from_waker(&waker));
}

/// Percentiles of `v` (microseconds), sorted in place.
pub fn percentiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.9), at(0.99))
}

/// Nanoseconds on CPU of every thread of the process but `except` (`/proc/self/task/*/schedstat`);
/// `None` where the kernel does not keep it.
pub fn cpu_ns_except(except: u64) -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let task = task.ok()?;
        if task.file_name().to_str()?.parse::<u64>().ok()? == except {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The calling thread's id (`/proc/thread-self`), 0 where unknown.
pub fn this_tid() -> u64 {
    std::fs::read_link("/proc/thread-self").ok().and_then(|p| p.file_name()?.to_str()?.parse().ok()).unwrap_or(0)
}

/// Sees the GPU's completion of a round on the host: a thread that spins on one byte of pinned
/// memory, which the round's last copy writes. Each round: [`Watcher::enqueue_round`] (128 MiB
/// of memset, so that the waiting side is already waiting, then the one-byte copy), the wait
/// under test, then [`Watcher::latency_us`] with the time the waiting code ran again.
pub struct Watcher {
    stream: Arc<Stream>,
    scratch: SharedStreamBuffer<u8>,
    values: SharedStreamBuffer<u8>,
    flag: PinnedBuffer<u8>,
    armed: Arc<std::sync::atomic::AtomicU8>,
    seen_at: Arc<std::sync::atomic::AtomicU64>,
    base: std::time::Instant,
    round: usize,
    /// 128 MiB memsets a round (1 unless set).
    memsets: usize,
    /// The watcher thread's id: its CPU time is not the waiting side's.
    pub tid: u64,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    /// A watcher of rounds on `stream`.
    pub fn new(stream: &Arc<Stream>) -> Result<Watcher> {
        use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
        let s = stream.as_stream();
        let scratch = SharedStreamBuffer::alloc_async(128 << 20, stream)?;
        let mut values = SharedStreamBuffer::alloc_async(256, stream)?;
        let table: Vec<u8> = (0..=255).collect();
        ordo_cuda::memory::copy::h2d_blocking(values.as_mut_slice(), &table, s)?;
        let flag = PinnedBuffer::<u8>::zeroed(1, HostAllocFlags::empty())?;
        let (armed, seen_at, tid) =
            (Arc::new(AtomicU8::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let base = std::time::Instant::now();
        let flag_addr = flag.as_ptr() as usize;
        let thread = {
            let (armed, seen_at, tid) = (armed.clone(), seen_at.clone(), tid.clone());
            std::thread::spawn(move || {
                tid.store(this_tid(), Ordering::SeqCst);
                loop {
                    let want = armed.load(Ordering::Acquire);
                    if want == 0 {
                        std::hint::spin_loop();
                        continue;
                    }
                    if want == u8::MAX {
                        return;
                    }
                    // SAFETY: one byte of pinned memory that outlives this thread (joined in
                    // `Drop`), written by the GPU: a volatile read sees each write.
                    while unsafe { std::ptr::read_volatile(flag_addr as *const u8) } != want {
                        std::hint::spin_loop();
                    }
                    seen_at.store(base.elapsed().as_nanos() as u64, Ordering::Release);
                    armed.store(0, Ordering::Release);
                }
            })
        };
        while tid.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let tid = tid.load(Ordering::SeqCst);
        let stream = stream.clone();
        Ok(Watcher {
            stream,
            scratch,
            values,
            flag,
            armed,
            seen_at,
            base,
            round: 0,
            memsets: 1,
            tid,
            thread: Some(thread),
        })
    }

    /// Sets how many 128 MiB memsets a round makes (at least 1): the length of the GPU work a
    /// wait waits for.
    pub fn set_memsets(&mut self, memsets: usize) {
        self.memsets = memsets.max(1);
    }

    /// Enqueues a round: 128 MiB of memset (times [`set_memsets`](Self::set_memsets)), then the
    /// copy of one byte the watcher waits for.
    pub fn enqueue_round(&mut self) -> Result<()> {
        use std::sync::atomic::Ordering;
        self.round += 1;
        // 1..=254: each round's differs from the last; 0 is idle and 255 stops the watcher.
        let value = (self.round % 254 + 1) as u8;
        self.armed.store(value, Ordering::Release);
        let s = self.stream.as_stream();
        let v = value as usize;
        // SAFETY: the buffers outlive every round (the watcher owns them and is dropped only
        // after the last round's wait, which the caller makes before the next round).
        unsafe {
            for _ in 0..self.memsets {
                ordo_cuda::memory::copy::memset_async(self.scratch.as_mut_slice(), value, s)?;
            }
            ordo_cuda::memory::copy::d2h_async(self.flag.pinned_mut(), self.values.slice(v..v + 1)?, s)?;
        }
        Ok(())
    }

    /// Microseconds from the GPU's completion of the round, as the watcher saw it, to `resumed`
    /// (taken with [`now`](Self::now) when the waiting code ran again).
    pub fn latency_us(&self, resumed: std::time::Duration) -> f64 {
        use std::sync::atomic::Ordering;
        while self.armed.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        let seen = self.seen_at.load(Ordering::Acquire) as f64 / 1e3;
        resumed.as_secs_f64() * 1e6 - seen
    }

    /// The time on the watcher's clock.
    pub fn now(&self) -> std::time::Duration {
        self.base.elapsed()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
        self.armed.store(u8::MAX, std::sync::atomic::Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
