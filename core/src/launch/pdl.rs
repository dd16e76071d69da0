//! Programmatic Dependent Launch that never costs: a kernel compiled in two forms from one body
//! ([`PdlKernel`]), and the rule that picks, per grid, which form to launch over which grid
//! ([`PdlPlan`]).
//!
//! # Why two forms
//! A kernel that merely *contains* `griddepcontrol.wait` (`cudaGridDependencySynchronize`) is
//! slower in grids of several waves, even launched **without** the PDL attribute (1.3x to 1.6x in
//! chains of 1M elements and more a kernel, against the same step compiled without the wait), and
//! no trigger placement wins the cost back (`docs/cuda-behaviours.md`, CB-23; the figures are in
//! BENCHMARKS.md, "PDL against the best plain form"). A grid-stride grid of one wave (SMs x
//! resident blocks a SM) pays nothing for the wait, and is faster than the one-element-a-thread
//! grid without it.
//!
//! So the body is compiled twice (`ORDO_PDL_KERNELS` in `include/ordo/pdl.cuh`): the plain form has
//! no `griddepcontrol` instruction at all; the PDL form waits and triggers. The body is a
//! grid-stride loop, correct over any grid.
//!
//! # The rule ([`PdlMode::Auto`])
//! - The full grid (one element a thread) fits in one wave: the PDL form over the full grid, with
//!   the PDL attribute. PDL hides the launch latency and prologue (0.6x a small kernel's time in a
//!   graph).
//! - It does not: by default a one-wave grid-stride grid ([`BeyondOneWave::GridStride`]), with
//!   the PDL form and attribute for work of up to [`PDL_MAX_WAVES`] waves, and the plain form
//!   without PDL for more (where the kernel's own time dwarfs the launch gap PDL hides, and the
//!   overlap costs more than it saves: BENCHMARKS.md, "Why four waves"). For a kernel whose own
//!   measurement shows its one-element-a-thread grid faster than its one-wave grid-stride grid,
//!   the plain form over the full grid without PDL ([`BeyondOneWave::Plain`]): exactly what a
//!   user writes without PDL.
//!
//! The other modes force one form and grid, for measuring the rule against its baselines: the
//! report (`ordo-bench`, group `pdl`) times every mode side by side and prints the ratio of the
//! rule's choice to the best plain form.

use super::config::check_block_size;
use super::{Kernel, KernelArgs, LaunchConfig};
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use crate::Device;

/// Which form of a [`PdlKernel`] to launch, over which grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PdlMode {
    /// ordo's rule (see the [module docs](self)).
    Auto,
    /// The plain form over the full grid (one element a thread), without PDL: what a user writes
    /// without PDL. A baseline.
    Plain,
    /// The plain form over at most one wave (grid-stride), without PDL. The other baseline.
    PlainOneWave,
    /// The PDL form over the full grid, with PDL, whatever its size: the form that pays for the
    /// wait in grids of several waves. For measuring.
    PdlFullGrid,
    /// The PDL form over at most one wave (grid-stride), with PDL.
    PdlOneWave,
}

/// The most waves of work (blocks of the one-element-a-thread grid over blocks the device runs at
/// once) for which [`BeyondOneWave::GridStride`] launches the PDL form by default: the PDL one-wave
/// grid beat the best plain form at 3.9 waves of ordo's chain step and lost to it at 15.5, where
/// the kernel's own time dwarfs the launch gap PDL hides and the overlap can cost more than it
/// saves (`ordo-bench` group `pdl`: BENCHMARKS.md, "Why four waves").
pub const PDL_MAX_WAVES: u32 = 4;

/// What [`PdlMode::Auto`] does with work larger than one wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BeyondOneWave {
    /// A one-wave grid-stride grid: the PDL form with PDL for work of up to `pdl_max_waves`
    /// waves, the plain form without PDL for more (the default, with [`PDL_MAX_WAVES`]: measured
    /// the fastest for ordo's chain step; the one-wave plain grid beat the one-element-a-thread
    /// grid there from 1M elements on). `pdl_max_waves: 1` never uses PDL beyond one wave.
    GridStride {
        /// The most waves of work launched with PDL.
        pdl_max_waves: u32,
    },
    /// The plain form over the full grid, without PDL (for a kernel whose one-element-a-thread
    /// grid is faster than its grid-stride loop).
    Plain,
}

impl Default for BeyondOneWave {
    fn default() -> BeyondOneWave {
        BeyondOneWave::GridStride { pdl_max_waves: PDL_MAX_WAVES }
    }
}

/// A planned launch of a [`PdlKernel`]: which form, how many blocks. Made by [`PdlPlan::new`] and
/// [`PdlPlan::for_elements`] (pure arithmetic) or [`PdlKernel::plan`] (which asks the device how
/// many blocks make one wave).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdlPlan {
    mode: PdlMode,
    pdl: bool,
    grid: u32,
    block: u32,
    shared_mem_bytes: u32,
    full_blocks: u32,
    one_wave_blocks: u32,
}

impl PdlPlan {
    /// The plan for work of `full_blocks` blocks of `block` threads (one element a thread) on a
    /// device that runs `one_wave_blocks` such blocks at once. A usage error for zero blocks, a
    /// block of 0 or over 1024 threads, or `one_wave_blocks` 0 (the kernel cannot run such a
    /// block there).
    pub fn new(
        full_blocks: u32,
        block: u32,
        one_wave_blocks: u32,
        mode: PdlMode,
        beyond: BeyondOneWave,
    ) -> Result<PdlPlan> {
        const CALL: &str = "PdlPlan::new";
        if full_blocks == 0 {
            return Err(Error::invalid(CALL, "zero blocks of work"));
        }
        check_block_size(block, CALL)?;
        if one_wave_blocks == 0 {
            return Err(Error::invalid(CALL, "no block of this size fits on an SM (one wave of 0 blocks)"));
        }
        let fits = full_blocks <= one_wave_blocks;
        let one_wave = full_blocks.min(one_wave_blocks);
        let (pdl, grid) = match mode {
            PdlMode::Plain => (false, full_blocks),
            PdlMode::PlainOneWave => (false, one_wave),
            PdlMode::PdlFullGrid => (true, full_blocks),
            PdlMode::PdlOneWave => (true, one_wave),
            PdlMode::Auto if fits => (true, full_blocks),
            PdlMode::Auto => match beyond {
                BeyondOneWave::GridStride { pdl_max_waves } => {
                    (full_blocks <= one_wave_blocks.saturating_mul(pdl_max_waves), one_wave)
                }
                BeyondOneWave::Plain => (false, full_blocks),
            },
        };
        Ok(PdlPlan { mode, pdl, grid, block, shared_mem_bytes: 0, full_blocks, one_wave_blocks })
    }

    /// The plan for `n` elements, one a thread in the full grid, in blocks of `block` threads. A
    /// usage error, besides [`new`](Self::new)'s, for zero elements or a full grid whose thread
    /// indices would pass `2^31` (a kernel's `int` index).
    pub fn for_elements(
        n: usize,
        block: u32,
        one_wave_blocks: u32,
        mode: PdlMode,
        beyond: BeyondOneWave,
    ) -> Result<PdlPlan> {
        const CALL: &str = "PdlPlan::for_elements";
        if n == 0 {
            return Err(Error::invalid(CALL, "zero elements"));
        }
        check_block_size(block, CALL)?;
        let full = n.div_ceil(block as usize);
        let threads = (full as u128) * u128::from(block);
        let full = u32::try_from(full)
            .ok()
            .filter(|_| threads <= 1u128 << 31)
            .ok_or(Error::invalid(CALL, "too many elements: thread indices would pass 2^31"))?;
        PdlPlan::new(full, block, one_wave_blocks, mode, beyond)
    }

    /// With `bytes` of dynamic shared memory a block (count them in the one wave too: see
    /// [`PdlKernel::one_wave_blocks`]).
    pub fn with_shared_mem(mut self, bytes: u32) -> PdlPlan {
        self.shared_mem_bytes = bytes;
        self
    }

    /// The mode asked for.
    pub fn mode(&self) -> PdlMode {
        self.mode
    }

    /// Whether the PDL form is launched (with the PDL attribute, where the launch allows it).
    pub fn uses_pdl(&self) -> bool {
        self.pdl
    }

    /// Blocks launched.
    pub fn grid(&self) -> u32 {
        self.grid
    }

    /// Threads a block.
    pub fn block(&self) -> u32 {
        self.block
    }

    /// Blocks of the one-element-a-thread grid.
    pub fn full_blocks(&self) -> u32 {
        self.full_blocks
    }

    /// Blocks the device runs at once.
    pub fn one_wave_blocks(&self) -> u32 {
        self.one_wave_blocks
    }

    /// Whether the grid is smaller than the work, so that the body's grid-stride loop runs more
    /// than once a thread.
    pub fn grid_stride(&self) -> bool {
        self.grid < self.full_blocks
    }

    /// The launch configuration. `programmatic`: whether this launch may overlap the kernel
    /// before it on the stream (set the PDL attribute when the plan uses the PDL form). Pass false
    /// where the kernel's code before its wait reads memory the previous work may write: the
    /// first kernel of a chain, after whatever the caller enqueued.
    #[inline]
    pub fn config(&self, programmatic: bool) -> LaunchConfig {
        LaunchConfig::new(self.grid, self.block)
            .with_shared_mem(self.shared_mem_bytes)
            .with_pdl(self.pdl && programmatic)
    }
}

/// One kernel body compiled in two forms (`ORDO_PDL_KERNELS(name, ...)` in `include/ordo/pdl.cuh`
/// defines `name`, plain, and `name_pdl`), and what [`PdlMode::Auto`] does beyond one wave.
pub struct PdlKernel<Args> {
    plain: Kernel<Args>,
    pdl: Kernel<Args>,
    beyond: BeyondOneWave,
}

impl<Args> Clone for PdlKernel<Args> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Args> Copy for PdlKernel<Args> {}

impl<Args> core::fmt::Debug for PdlKernel<Args> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PdlKernel")
            .field("plain", &self.plain.func)
            .field("pdl", &self.pdl.func)
            .field("beyond", &self.beyond)
            .finish()
    }
}

impl<Args: KernelArgs> PdlKernel<Args> {
    /// The two forms of one body: `plain` (compiled with `ordo::pdl::off`) and `pdl` (with
    /// `ordo::pdl::on`).
    pub fn new(plain: Kernel<Args>, pdl: Kernel<Args>) -> PdlKernel<Args> {
        PdlKernel { plain, pdl, beyond: BeyondOneWave::default() }
    }

    /// With [`PdlMode::Auto`] doing `beyond` for work larger than one wave.
    pub fn beyond_one_wave(mut self, beyond: BeyondOneWave) -> PdlKernel<Args> {
        self.beyond = beyond;
        self
    }

    /// The plain form.
    pub fn plain(&self) -> Kernel<Args> {
        self.plain
    }

    /// The PDL form.
    pub fn pdl(&self) -> Kernel<Args> {
        self.pdl
    }

    /// The form `plan` launches.
    #[inline]
    pub fn form(&self, plan: &PdlPlan) -> Kernel<Args> {
        if plan.pdl {
            self.pdl
        } else {
            self.plain
        }
    }

    /// Blocks of `block` threads with `shared_mem_bytes` dynamic shared memory that `device` runs
    /// at once, for the form that fits fewer (their registers may differ): SMs x resident blocks
    /// a SM (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`, asked with `device` current).
    pub fn one_wave_blocks(&self, device: Device, block: u32, shared_mem_bytes: u32) -> Result<u32> {
        device.with_current(|| {
            let per_sm = self
                .plain
                .max_active_blocks_per_sm(block, shared_mem_bytes)?
                .min(self.pdl.max_active_blocks_per_sm(block, shared_mem_bytes)?);
            Ok(per_sm.saturating_mul(device.sm_count()?))
        })
    }

    /// The plan for `n` elements in blocks of `block` threads on `device` ([`PdlPlan::for_elements`]
    /// with [`one_wave_blocks`](Self::one_wave_blocks)): a few attribute queries, made once, not
    /// per launch.
    pub fn plan(&self, device: Device, n: usize, block: u32, mode: PdlMode) -> Result<PdlPlan> {
        check_block_size(block, "PdlKernel::plan")?;
        let one_wave = self.one_wave_blocks(device, block, 0)?;
        PdlPlan::for_elements(n, block, one_wave, mode, self.beyond)
    }

    /// Launches the form `plan` chose, over its grid, on `stream`: one [`Kernel::launch`], with
    /// the PDL attribute when the plan uses the PDL form and `programmatic` is true (see
    /// [`PdlPlan::config`]).
    ///
    /// # Safety
    /// - Everything [`Kernel::launch`] requires, for both forms.
    /// - The body is correct over the plan's grid (a grid-stride loop over the elements).
    /// - Under PDL, the body reads what the previous kernel writes only after its wait.
    #[inline]
    pub unsafe fn launch(&self, stream: StreamRef<'_>, plan: &PdlPlan, programmatic: bool, args: Args) -> Result<()> {
        // SAFETY: the caller's contract, for the form the plan chose.
        unsafe { self.form(plan).launch(stream, &plan.config(programmatic), args) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(full: u32, wave: u32, mode: PdlMode, beyond: BeyondOneWave) -> (bool, u32) {
        let p = PdlPlan::new(full, 256, wave, mode, beyond).unwrap();
        (p.uses_pdl(), p.grid())
    }

    #[test]
    fn the_rule_uses_pdl_within_one_wave_and_a_few_waves_grid_stride() {
        let g = BeyondOneWave::default();
        assert_eq!(g, BeyondOneWave::GridStride { pdl_max_waves: PDL_MAX_WAVES });
        // 4096 elements (16 blocks) on an H200-like 1056-block wave: PDL over the full grid.
        assert_eq!(plan(16, 1056, PdlMode::Auto, g), (true, 16));
        assert_eq!(plan(1056, 1056, PdlMode::Auto, g), (true, 1056), "exactly one wave");
        // 1M elements (4096 blocks, 3.9 waves): the PDL form over one wave, grid-stride.
        assert_eq!(plan(4096, 1056, PdlMode::Auto, g), (true, 1056));
        assert_eq!(plan(4 * 1056, 1056, PdlMode::Auto, g), (true, 1056), "exactly four waves");
        // Past four waves (4M elements: 16384 blocks): the plain form over one wave, no PDL.
        assert_eq!(plan(4 * 1056 + 1, 1056, PdlMode::Auto, g), (false, 1056));
        assert_eq!(plan(16384, 1056, PdlMode::Auto, g), (false, 1056));
        // Another cap: one wave only, or every size.
        let one = BeyondOneWave::GridStride { pdl_max_waves: 1 };
        assert_eq!(plan(1057, 1056, PdlMode::Auto, one), (false, 1056));
        let all = BeyondOneWave::GridStride { pdl_max_waves: u32::MAX };
        assert_eq!(plan(u32::MAX, 1056, PdlMode::Auto, all), (true, 1056), "no overflow");
        // Or, for a kernel that says so, the plain full grid.
        assert_eq!(plan(16384, 1056, PdlMode::Auto, BeyondOneWave::Plain), (false, 16384));
        assert_eq!(plan(16, 1056, PdlMode::Auto, BeyondOneWave::Plain), (true, 16), "within a wave still PDL");
    }

    #[test]
    fn forced_modes_give_their_form_and_grid() {
        let g = BeyondOneWave::default();
        assert_eq!(plan(16384, 1056, PdlMode::Plain, g), (false, 16384));
        assert_eq!(plan(16384, 1056, PdlMode::PlainOneWave, g), (false, 1056));
        assert_eq!(plan(16384, 1056, PdlMode::PdlFullGrid, g), (true, 16384));
        assert_eq!(plan(16384, 1056, PdlMode::PdlOneWave, g), (true, 1056));
        assert_eq!(plan(16, 1056, PdlMode::PlainOneWave, g), (false, 16), "never more blocks than the work");
        let p = PdlPlan::new(16384, 256, 1056, PdlMode::PlainOneWave, g).unwrap();
        assert!(p.grid_stride() && !p.config(true).pdl, "the plain form never gets the attribute");
        let p = PdlPlan::new(16, 256, 1056, PdlMode::Auto, g).unwrap();
        assert!(p.config(true).pdl && !p.config(false).pdl && !p.grid_stride());
    }

    #[test]
    fn bad_plans_are_usage_errors() {
        let g = BeyondOneWave::default();
        assert!(PdlPlan::new(0, 256, 1056, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::new(16, 0, 1056, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::new(16, 1025, 1056, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::new(16, 256, 0, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::for_elements(0, 256, 1056, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::for_elements(usize::MAX, 256, 1056, PdlMode::Auto, g).is_err());
        assert!(PdlPlan::for_elements((1 << 31) + 1, 256, 1056, PdlMode::Auto, g).is_err());
        let p = PdlPlan::for_elements(1 << 31, 256, 1056, PdlMode::Plain, g).unwrap();
        assert_eq!(p.full_blocks(), (1 << 31) / 256);
        let p = PdlPlan::for_elements(4097, 256, 1056, PdlMode::Auto, g).unwrap();
        assert_eq!(p.full_blocks(), 17, "rounded up");
    }
}
