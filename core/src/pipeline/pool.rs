//! [`PipelinePool`]: pipelines of one setting, shared by threads and kept across captures.

use super::Pipeline;
use crate::device::Device;
use crate::error::{CudaError, Error, Result};
use crate::in_context::InContext;
use crate::sync::lock;
use ordo_cuda_sys as sys;
use std::sync::Mutex;
use std::vec::Vec;

/// How a pool's pipelines are made: every pipeline of one pool has this setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    /// Worker streams of each pipeline (see [`Pipeline::new`]).
    pub streams: usize,
    /// Their priority; `None` for CUDA's default (see [`Pipeline::with_priority`]).
    pub priority: Option<i32>,
    /// Stage timing events around each chunk's stages ([`Pipeline::set_stage_timing`]).
    pub stage_timing: bool,
}

/// How many pipelines a pool keeps, per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Idle pipelines kept at most (more exist only while that many runs overlap).
    pub idle: usize,
    /// Pipelines held by captures still open, at most: a take that would need a new pipeline while
    /// this many of the device's are held gets `cudaErrorMemoryAllocation` (end or abandon the
    /// captures to free them).
    pub held_by_captures: usize,
}

impl PoolLimits {
    /// 16 idle, 256 held by open captures.
    pub const DEFAULT: PoolLimits = PoolLimits { idle: 16, held_by_captures: 256 };
}

impl Default for PoolLimits {
    fn default() -> PoolLimits {
        PoolLimits::DEFAULT
    }
}

/// A pipeline of a pool, in the CUDA context its streams and events belong to ([`InContext`]):
/// dropped normally while the context lives, forgotten (never touched, CUDA having freed its
/// handles) once a `cudaDeviceReset` has destroyed it.
pub struct PooledPipeline {
    pipeline: InContext<Pipeline>,
}

impl PooledPipeline {
    /// The pipeline.
    pub fn pipeline(&mut self) -> &mut Pipeline {
        self.pipeline.unchecked_mut()
    }

    /// The device the pipeline was made on.
    pub fn device(&self) -> Device {
        self.pipeline.context().device()
    }

    /// Whether the pipeline must be kept: its context alive and a worker still part of an open
    /// capture. A pipeline whose state CUDA cannot tell is not kept.
    fn held_by_capture(&mut self) -> bool {
        self.pipeline.get().is_ok_and(|p| p.in_capture().unwrap_or(false))
    }
}

impl core::fmt::Debug for PooledPipeline {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PooledPipeline").field("device", &self.device()).finish()
    }
}

/// Pipelines of pools that were dropped while an open capture held them, dropped once it ended.
static ORPHANS: Mutex<Vec<PooledPipeline>> = Mutex::new(Vec::new());

/// Drops the orphans whose captures have ended (outside the lock).
fn sweep_orphans() {
    let orphans: Vec<PooledPipeline> = core::mem::take(&mut *lock(&ORPHANS));
    if orphans.is_empty() {
        return;
    }
    let mut keep = Vec::new();
    for mut p in orphans {
        if p.held_by_capture() {
            keep.push(p);
        }
    }
    lock(&ORPHANS).extend(keep);
}

/// How many pipelines of dropped pools are kept for captures still open, in the process.
pub fn orphaned_pipelines() -> usize {
    lock(&ORPHANS).len()
}

/// A pool of [`Pipeline`]s of one setting, any device, for callers that run pipelines from
/// several threads at once and inside captures (the C ABI's pipeline handles and
/// `ordo_pipeline_run` are pools). Locked only to take a pipeline out or put one back.
///
/// A run takes a pipeline from the pool ([`run`](Self::run), or [`take`](Self::take) and
/// [`give_back`](Self::give_back)), runs with no lock held (the run's compute may run other
/// pipelines of the pool, and several threads run at once, each on its own pipeline), and puts it
/// back. The pool keeps:
/// - **idle pipelines**, at most [`PoolLimits::idle`] a device: a pipeline given back beyond that
///   is dropped, and a take that finds more (left by captures that have ended since) drops the
///   surplus;
/// - **pipelines held by open captures**: a pipeline whose last run was captured has worker
///   streams that belong to the caller's capture until it ends (work enqueued on them meanwhile
///   would join it), so it is kept out of use, and alive, until then; at most
///   [`PoolLimits::held_by_captures`] a device, after which a take that needs a new pipeline fails
///   with `cudaErrorMemoryAllocation`. When the pool is dropped, such pipelines move to a
///   process-wide list of orphans ([`orphaned_pipelines`]), dropped once their capture has ended
///   (looked at on every take).
///
/// A pipeline whose run failed with a CUDA error is dropped rather than kept; one whose context a
/// `cudaDeviceReset` destroyed is forgotten without a CUDA call (its handles died with the
/// context; see [`InContext`]), and the next take makes a fresh one.
pub struct PipelinePool {
    settings: PoolSettings,
    limits: PoolLimits,
    pipelines: Mutex<Vec<PooledPipeline>>,
}

impl core::fmt::Debug for PipelinePool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PipelinePool").field("settings", &self.settings).field("limits", &self.limits).finish()
    }
}

impl PipelinePool {
    /// An empty pool (no CUDA call: pipelines are made on first use, or by
    /// [`prepare`](Self::prepare)).
    pub const fn new(settings: PoolSettings, limits: PoolLimits) -> PipelinePool {
        PipelinePool { settings, limits, pipelines: Mutex::new(Vec::new()) }
    }

    /// The setting of the pool's pipelines.
    pub fn settings(&self) -> PoolSettings {
        self.settings
    }

    /// The pool's limits.
    pub fn limits(&self) -> PoolLimits {
        self.limits
    }

    /// How many pipelines the pool holds now, idle or held by open captures.
    pub fn len(&self) -> usize {
        lock(&self.pipelines).len()
    }

    /// Whether the pool holds no pipeline.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new pipeline of the pool's setting on `device` (made with `device` current).
    fn make(&self, device: Device) -> Result<PooledPipeline> {
        let PoolSettings { streams, priority, stage_timing } = self.settings;
        device.with_current(|| {
            let mut p = match priority {
                Some(priority) => Pipeline::with_priority(streams, priority)?,
                None => Pipeline::new(streams)?,
            };
            p.set_stage_timing(stage_timing);
            Ok(PooledPipeline { pipeline: InContext::new(p)? })
        })
    }

    /// Makes a pipeline on `device` and keeps it idle: a bad device or priority fails here rather
    /// than at the first run.
    pub fn prepare(&self, device: Device) -> Result<()> {
        let p = self.make(device)?;
        self.give_back(p);
        Ok(())
    }

    /// An idle pipeline of `device` from the pool, or a new one (made with `device` current).
    ///
    /// A pipeline still part of an open capture stays in the pool, unused; one of a destroyed
    /// context is forgotten; one whose state CUDA cannot tell is dropped. When the device's
    /// pipelines outnumber [`PoolLimits::idle`] (captures held many, and have ended since), every
    /// one is looked at and idle ones beyond the limit are dropped. Pipelines are dropped (their
    /// streams destroyed) outside the lock.
    pub fn take(&self, device: Device) -> Result<PooledPipeline> {
        sweep_orphans();
        let mut candidates = {
            let mut pool = lock(&self.pipelines);
            let (mine, others): (Vec<PooledPipeline>, Vec<PooledPipeline>) =
                pool.drain(..).partition(|p| p.device() == device);
            *pool = others;
            mine
        };
        let trim = candidates.len() > self.limits.idle;
        // Asked outside the lock (one CUDA call a worker stream): until one is free, or all of
        // them when the pool must be trimmed.
        let mut found = None;
        let mut idle = Vec::new();
        let mut held = Vec::new();
        let mut unseen = Vec::new();
        while let Some(p) = candidates.pop() {
            if found.is_some() && !trim {
                unseen.push(p);
                continue;
            }
            let in_capture = match p.pipeline.get() {
                Ok(pipeline) => pipeline.in_capture(),
                Err(_) => {
                    drop(p); // forgotten, never touched
                    continue;
                }
            };
            match in_capture {
                Ok(false) if found.is_none() => found = Some(p),
                Ok(false) => idle.push(p),
                Ok(true) => held.push(p),
                Err(_) => drop(p),
            }
        }
        let surplus = idle.split_off(idle.len().min(self.limits.idle));
        let held_count = held.len();
        {
            let mut pool = lock(&self.pipelines);
            pool.extend(held);
            pool.extend(idle);
            pool.extend(unseen);
        }
        drop(surplus);
        match found {
            Some(p) => Ok(p),
            None if held_count >= self.limits.held_by_captures => Err(Error::Cuda(
                CudaError::new(sys::cudaError::cudaErrorMemoryAllocation, "PipelinePool::take").with_hint(
                    "every pipeline of the device is held by a capture still open: end or abandon those captures",
                ),
            )),
            None => self.make(device),
        }
    }

    /// Puts a pipeline back after a run. Idle pipelines beyond [`PoolLimits::idle`] of its device
    /// are dropped (outside the lock); one still part of an open capture is always kept (its
    /// streams must outlive the capture).
    pub fn give_back(&self, mut p: PooledPipeline) {
        let keep = p.held_by_capture();
        let device = p.device();
        let mut pool = lock(&self.pipelines);
        if keep || pool.iter().filter(|q| q.device() == device).count() < self.limits.idle {
            pool.push(p);
        } else {
            drop(pool);
            drop(p);
        }
    }

    /// Runs `run` on a pipeline of the pool for `device`, with `device` current, and puts the
    /// pipeline back; one whose run failed with a CUDA error is dropped instead (after a
    /// `cudaDeviceReset`, say, its streams are gone), unless it is still part of the caller's
    /// open capture, which needs its streams until it ends. No lock is held while `run` runs.
    pub fn run<R>(&self, device: Device, run: impl FnOnce(&mut Pipeline) -> Result<R>) -> Result<R> {
        let mut pooled = self.take(device)?;
        let result = device.with_current(|| run(pooled.pipeline()));
        match result {
            Err(Error::Cuda(_)) if !pooled.held_by_capture() => drop(pooled),
            _ => self.give_back(pooled),
        }
        result
    }
}

impl Drop for PipelinePool {
    /// Pipelines still held by an open capture go to the orphans (their streams must outlive the
    /// capture); the others are dropped.
    fn drop(&mut self) {
        let pipelines = core::mem::take(&mut *lock(&self.pipelines));
        let mut held = Vec::new();
        for mut p in pipelines {
            if p.held_by_capture() {
                held.push(p);
            }
        }
        lock(&ORPHANS).extend(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_pool_makes_nothing_until_used_and_keeps_its_limits() {
        let settings = PoolSettings { streams: 3, priority: None, stage_timing: false };
        let pool = PipelinePool::new(settings, PoolLimits::DEFAULT);
        assert!(pool.is_empty());
        assert_eq!(pool.limits(), PoolLimits { idle: 16, held_by_captures: 256 });
        assert_eq!(pool.settings(), settings);
        // Without a driver the first take fails at CUDA's first call, with CUDA's error.
        if let Err(e) = pool.take(Device::from_ordinal(0)) {
            assert!(e.cuda_code().is_some(), "{e}");
        }
    }
}
