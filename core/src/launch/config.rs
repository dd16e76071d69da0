//! How a kernel is launched: [`Dim3`] and [`LaunchConfig`] (grid, block, dynamic shared memory and
//! the launch attributes of [`attributes`](super::attributes)), with the checks that need no
//! device ([`LaunchConfig::validate`]).

use super::attributes::{LaunchEvent, MemSyncDomain, ProgrammaticEvent};
use crate::error::{Error, Result};
use ordo_cuda_sys as sys;

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`, in u128 so it cannot overflow (three `u32` factors can exceed `u64`).
    pub const fn volume(self) -> u128 {
        self.x as u128 * self.y as u128 * self.z as u128
    }

    /// Whether an extent is zero (the volume is then zero).
    pub(crate) const fn has_zero(self) -> bool {
        self.x == 0 || self.y == 0 || self.z == 0
    }

    /// Whether a grid's extents are within CUDA's limits (x < 2^31, y and z <= 65535), zero
    /// extents aside.
    #[inline(always)]
    const fn within_grid_limits(self) -> bool {
        self.x <= i32::MAX as u32 && self.y <= 65535 && self.z <= 65535
    }

    /// Whether a block's extents are within CUDA's limits (at most 1024 threads, z at most 64),
    /// zero extents aside. No product can overflow: each factor is checked first.
    #[inline(always)]
    const fn within_block_limits(self) -> bool {
        self.x <= 1024 && self.y <= 1024 && self.x * self.y <= 1024 && self.z <= 64 && self.x * self.y * self.z <= 1024
    }

    /// Whether each extent of `self` is a whole multiple of `of`'s (`false` where `of` has a
    /// zero extent).
    pub(crate) const fn is_multiple_of(self, of: Dim3) -> bool {
        !of.has_zero() && self.x % of.x == 0 && self.y % of.y == 0 && self.z % of.z == 0
    }

    #[inline(always)]
    pub(crate) fn to_raw(self) -> sys::dim3 {
        sys::dim3 { x: self.x, y: self.y, z: self.z }
    }
}

/// A usage error naming `call` unless `block`, a 1-D block, is 1..=1024 threads: the check of
/// every constructor that takes a block size as a number.
pub(crate) fn check_block_size(block: u32, call: &'static str) -> Result<()> {
    if block == 0 || block > 1024 {
        return Err(Error::invalid(call, "block size must be 1..=1024 threads"));
    }
    Ok(())
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

/// How a kernel is launched: grid, block, dynamic shared memory, and launch attributes (each one
/// a field here; what CUDA does with it, and whether a graph's kernel node can keep it, is said
/// once, in [`attributes`](super::attributes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block (at most 1024 in all).
    pub block: Dim3,
    /// Dynamic shared memory a block, in bytes. Above 48 KiB the kernel must first be allowed it
    /// with [`Kernel::set_max_dynamic_shared_memory`](super::Kernel::set_max_dynamic_shared_memory).
    pub shared_mem_bytes: u32,
    /// Programmatic stream serialization (PDL): may start before the previous kernel finishes.
    pub pdl: bool,
    /// Launch priority (`cudaLaunchAttributePriority`), lower is higher, as for streams.
    pub priority: Option<i32>,
    /// Thread-block cluster dimensions (`cudaLaunchAttributeClusterDimension`, sm_90 and later).
    pub cluster: Option<Dim3>,
    /// A cooperative launch (`cudaLaunchAttributeCooperative`): every block is resident at once,
    /// so blocks may synchronise across the grid (`cooperative_groups::this_grid().sync()`). The
    /// grid is checked against what the device holds at once before the launch.
    pub cooperative: bool,
    /// The memory-synchronisation domain (`cudaLaunchAttributeMemSyncDomain`, sm_90 and later).
    pub mem_sync_domain: Option<MemSyncDomain>,
    /// Preferred cluster dimensions (`cudaLaunchAttributePreferredClusterDimension`, CUDA 12.8
    /// headers and sm_90 or later): the hardware uses them where it can, else `cluster`, of which
    /// they must be a multiple.
    pub preferred_cluster: Option<Dim3>,
    /// An event the kernel's blocks fire (`cudaLaunchAttributeProgrammaticEvent`): once every
    /// block has called `cudaTriggerProgrammaticLaunchCompletion()` (or, with
    /// `trigger_at_block_start`, as each block starts). Work on another stream that waits on it
    /// may overlap the kernel; what it reads of the kernel's writes is not ordered by it.
    pub programmatic_event: Option<ProgrammaticEvent>,
    /// An event recorded once every block of the kernel has started
    /// (`cudaLaunchAttributeLaunchCompletionEvent`): work waiting on it may start while the
    /// kernel still runs.
    pub launch_completion_event: Option<LaunchEvent>,
}

/// Largest dynamic shared memory a block gets without opting in.
pub const DEFAULT_MAX_DYNAMIC_SHARED_MEMORY: u32 = 48 * 1024;

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no shared memory, no attributes.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
            pdl: false,
            priority: None,
            cluster: None,
            cooperative: false,
            mem_sync_domain: None,
            preferred_cluster: None,
            programmatic_event: None,
            launch_completion_event: None,
        }
    }

    /// A 1-D grid of `block`-thread blocks covering `n` elements (the last block partly idle).
    pub fn for_elements(n: usize, block: u32) -> Result<LaunchConfig> {
        const CALL: &str = "LaunchConfig::for_elements";
        if n == 0 {
            return Err(Error::invalid(CALL, "zero elements: a grid needs at least one block"));
        }
        check_block_size(block, CALL)?;
        let blocks = n.div_ceil(block as usize);
        let grid = u32::try_from(blocks)
            .ok()
            .filter(|&g| g <= i32::MAX as u32)
            .ok_or(Error::invalid(CALL, "too many elements: the grid would exceed 2^31-1 blocks"))?;
        Ok(LaunchConfig::new(grid, block))
    }

    /// A 2-D or 3-D grid of `block` blocks covering `extent` (width, height[, depth]) elements,
    /// each dimension rounded up (the last blocks of a row, column or layer partly idle): for an
    /// image of `(width, height)` pixels with `(16, 16)` blocks, the grid is
    /// `(ceil(width / 16), ceil(height / 16))`. A zero extent or block dimension, a block over
    /// 1024 threads (or z over 64), or a grid over CUDA's limits is a clear error, checked here
    /// as [`validate`](Self::validate) would.
    pub fn for_extent(extent: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<LaunchConfig> {
        const CALL: &str = "LaunchConfig::for_extent";
        let (e, b) = (extent.into(), block.into());
        if e.has_zero() {
            return Err(Error::invalid(CALL, "zero extent: a grid needs at least one block"));
        }
        if b.has_zero() {
            return Err(Error::invalid(CALL, "zero block dimension"));
        }
        let config = LaunchConfig::new(Dim3 { x: e.x.div_ceil(b.x), y: e.y.div_ceil(b.y), z: e.z.div_ceil(b.z) }, b);
        config.validate()?;
        Ok(config)
    }

    /// With programmatic stream serialization (PDL) on or off.
    pub fn with_pdl(mut self, on: bool) -> LaunchConfig {
        self.pdl = on;
        self
    }

    /// With `bytes` of dynamic shared memory a block.
    pub fn with_shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// With a launch priority.
    pub fn with_priority(mut self, priority: i32) -> LaunchConfig {
        self.priority = Some(priority);
        self
    }

    /// With thread-block cluster dimensions.
    pub fn with_cluster(mut self, cluster: impl Into<Dim3>) -> LaunchConfig {
        self.cluster = Some(cluster.into());
        self
    }

    /// As a cooperative launch or not (see [`cooperative`](Self::cooperative)).
    pub fn with_cooperative(mut self, on: bool) -> LaunchConfig {
        self.cooperative = on;
        self
    }

    /// In the memory-synchronisation domain `domain`.
    pub fn with_mem_sync_domain(mut self, domain: MemSyncDomain) -> LaunchConfig {
        self.mem_sync_domain = Some(domain);
        self
    }

    /// With preferred cluster dimensions (a multiple of the cluster dimensions, which must be
    /// set too).
    pub fn with_preferred_cluster(mut self, preferred: impl Into<Dim3>) -> LaunchConfig {
        self.preferred_cluster = Some(preferred.into());
        self
    }

    /// With `event` fired by the kernel's blocks (see [`programmatic_event`](Self::programmatic_event)):
    /// as each block starts when `trigger_at_block_start`, else once every block has called
    /// `cudaTriggerProgrammaticLaunchCompletion()`.
    pub fn with_programmatic_event(mut self, event: &crate::Event, trigger_at_block_start: bool) -> LaunchConfig {
        self.programmatic_event = Some(ProgrammaticEvent { event: LaunchEvent::of(event), trigger_at_block_start });
        self
    }

    /// With `event` recorded once every block has started (see
    /// [`launch_completion_event`](Self::launch_completion_event)).
    pub fn with_launch_completion_event(mut self, event: &crate::Event) -> LaunchConfig {
        self.launch_completion_event = Some(LaunchEvent::of(event));
        self
    }

    /// Whether this is a plain launch that [`validate`](Self::validate) accepts: dimensions
    /// within CUDA's limits, no attribute set, not cooperative. Comparisons only: the launch's
    /// fast path, which then makes the driver's call with no attribute array.
    #[inline(always)]
    #[cfg_attr(not(cuda_12_8), allow(dead_code))]
    pub(crate) fn is_plain(&self) -> bool {
        // Every field named: a field added later does not compile here until it is decided.
        let LaunchConfig {
            grid: g,
            block: b,
            shared_mem_bytes: _,
            pdl,
            priority,
            cluster,
            cooperative,
            mem_sync_domain,
            preferred_cluster,
            programmatic_event,
            launch_completion_event,
        } = self;
        !g.has_zero()
            && g.within_grid_limits()
            && !b.has_zero()
            && b.within_block_limits()
            && !*pdl
            && !*cooperative
            && priority.is_none()
            && cluster.is_none()
            && mem_sync_domain.is_none()
            && preferred_cluster.is_none()
            && programmatic_event.is_none()
            && launch_completion_event.is_none()
    }

    /// Checks what can be checked without the device: non-zero dimensions within CUDA's limits,
    /// at most 1024 threads a block, a grid divisible by its cluster.
    pub fn validate(&self) -> Result<()> {
        const CALL: &str = "LaunchConfig::validate";
        let (g, b) = (self.grid, self.block);
        if g.has_zero() {
            return Err(Error::invalid(CALL, "zero grid dimension"));
        }
        if !g.within_grid_limits() {
            return Err(Error::invalid(CALL, "grid dimension over CUDA's limit (x < 2^31, y and z <= 65535)"));
        }
        if b.has_zero() {
            return Err(Error::invalid(CALL, "zero block dimension"));
        }
        if !b.within_block_limits() {
            return Err(Error::invalid(CALL, "block over 1024 threads (or z over 64)"));
        }
        if let Some(c) = self.cluster {
            if c.has_zero() {
                return Err(Error::invalid(CALL, "zero cluster dimension"));
            }
            if !g.is_multiple_of(c) {
                return Err(Error::invalid(CALL, "grid not a multiple of the cluster dimensions"));
            }
        }
        if let Some(p) = self.preferred_cluster {
            if !cfg!(cuda_12_8) {
                return Err(Error::usage(
                    crate::UsageKind::NotSupported,
                    CALL,
                    "preferred cluster dimensions need CUDA 12.8 or later headers",
                ));
            }
            let Some(c) = self.cluster else {
                return Err(Error::invalid(CALL, "preferred cluster dimensions without cluster dimensions"));
            };
            if p.has_zero() || !p.is_multiple_of(c) {
                return Err(Error::invalid(CALL, "preferred cluster dimensions not a multiple of the cluster's"));
            }
            if !g.is_multiple_of(p) {
                return Err(Error::invalid(CALL, "grid not a multiple of the preferred cluster dimensions"));
            }
        }
        if self.cooperative && self.cluster.is_some() {
            return Err(Error::invalid(CALL, "a cooperative launch with clusters: CUDA allows only one of the two"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch's fast path takes a configuration only where `validate` accepts it and sets no
    /// attribute; every attribute, the cooperative flag and every dimension limit sends it to the
    /// general path.
    #[test]
    fn a_plain_configuration_is_one_validate_accepts_with_no_attribute() {
        let dims = [0u32, 1, 2, 3, 31, 32, 64, 65, 1023, 1024, 1025, 65535, 65536, i32::MAX as u32, u32::MAX];
        let mut n = 0;
        for &x in &dims {
            for &y in &dims {
                for &z in &[0u32, 1, 2, 64, 65, 1024] {
                    for (grid, block) in
                        [(Dim3::new(x, y, z), Dim3::new(32, 1, 1)), (Dim3::new(4, 1, 1), Dim3::new(x, y, z))]
                    {
                        let c = LaunchConfig::new(grid, block);
                        assert_eq!(c.is_plain(), c.validate().is_ok(), "{grid:?} x {block:?}");
                        n += 1;
                    }
                }
            }
        }
        assert!(n > 1000);
        let base = LaunchConfig::new(8, 128);
        assert!(base.is_plain());
        let event = LaunchEvent::from_raw(core::ptr::NonNull::<u8>::dangling().as_ptr().cast());
        let attributed = [
            LaunchConfig { pdl: true, ..base },
            LaunchConfig { cooperative: true, ..base },
            LaunchConfig { priority: Some(0), ..base },
            LaunchConfig { cluster: Some(Dim3::new(2, 1, 1)), ..base },
            LaunchConfig { mem_sync_domain: Some(MemSyncDomain::Default), ..base },
            LaunchConfig { preferred_cluster: Some(Dim3::new(4, 1, 1)), cluster: Some(Dim3::new(2, 1, 1)), ..base },
            LaunchConfig {
                programmatic_event: event.map(|event| ProgrammaticEvent { event, trigger_at_block_start: false }),
                ..base
            },
            LaunchConfig { launch_completion_event: event, ..base },
        ];
        for c in attributed {
            assert!(!c.is_plain(), "{c:?}");
            let mut any = false;
            c.for_each_attribute(|_| any = true);
            assert!(any || c.cooperative, "{c:?} sets an attribute or is cooperative");
        }
    }

    #[test]
    fn a_zero_extent_is_found_in_any_dimension() {
        assert!(!Dim3::new(1, 1, 1).has_zero());
        for d in [Dim3::new(0, 1, 1), Dim3::new(1, 0, 1), Dim3::new(1, 1, 0)] {
            assert!(d.has_zero(), "{d:?}");
            assert!(!Dim3::new(4, 4, 4).is_multiple_of(d), "nothing is a multiple of {d:?}");
        }
        assert!(Dim3::new(8, 6, 4).is_multiple_of(Dim3::new(2, 3, 4)));
        assert!(!Dim3::new(8, 6, 4).is_multiple_of(Dim3::new(3, 3, 4)));
    }
}
