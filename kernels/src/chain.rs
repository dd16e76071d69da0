//! A chain of dependent kernels with Programmatic Dependent Launch, planned so that PDL never makes
//! it slower than the plain chain.
//!
//! # What PDL gains, and when it could cost
//! With PDL the next kernel is launched as soon as every block of the current one has called the
//! trigger (or exited); its blocks start, run their prologue, and wait in `griddepcontrol.wait`
//! until the current kernel has completed and its writes are visible. Small kernels gain the most:
//! their launch latency and prologue hide behind the previous kernel (measured on an H200, 100
//! dependent kernels of 4096 elements: 0.60-0.62x the plain graph's time a kernel, 0.84-0.88x
//! eager).
//!
//! The source measured a chain of 4M-element kernels 1.7x *slower* with PDL, wait and trigger at
//! the kernel start. The suspected mechanism: a grid of several waves (16384 blocks against 1056
//! resident on an H200) triggers only when its last wave starts, and the dependent blocks that then
//! launch sit resident in `griddepcontrol.wait`, holding SM slots and registers while the last
//! wave drains; with a trigger at the start of every block, any block of the next kernel that is
//! scheduled early competes with the current kernel. On the H200 here this did **not** reproduce:
//! at 4M elements every placement was at most as slow as no PDL (early trigger 0.97x in a graph,
//! the source's wait-then-trigger 0.98x, after-the-stores 1.00x; eager 0.90-0.93x; an in-place
//! add-style kernel like the source's 0.95x). The source's slowdown must depend on its kernel and
//! machine; ordo cannot show it, so it stays on the safe side.
//!
//! # The rule
//! - Grid within one wave (`blocks <= SMs x max active blocks per SM`): trigger at the start. The
//!   next kernel's launch latency and prologue overlap this kernel entirely.
//! - Grid of several waves: trigger after the block's stores. The next kernel launches only as the
//!   last wave drains, so its blocks cannot hold slots the current kernel still needs, and its
//!   launch and prologue still overlap the tail. Measured 1.00x the plain graph and 0.92-0.94x
//!   eager at 4M elements: never slower, at the price of the 3% an early trigger gained there.
//!
//! [`ChainPdl::Auto`] applies the rule; the others force a variant, for measuring.

use crate::{count_i32, kernel, BLOCK};
use ordo_core::launch::LaunchConfig;
use ordo_core::{Device, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

/// Where each block of a chain kernel triggers the launch of the next kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Trigger {
    /// After the block's stores.
    End = 0,
    /// At the start, before the prologue.
    Start = 1,
    /// At the start, right after the PDL wait (the placement the source measured).
    AfterWait = 2,
}

/// How the chain uses PDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainPdl {
    /// Plain launches: each kernel starts after the previous one has finished.
    Off,
    /// PDL, trigger at the start of each block, before the prologue.
    EarlyTrigger,
    /// PDL, wait then trigger at the start of each block (the source's placement).
    WaitThenTrigger,
    /// PDL, trigger after each block's stores.
    LateTrigger,
    /// The rule in the [module docs](self): early trigger within one wave, late beyond.
    Auto,
}

/// A planned chain: grid size, and what PDL does. Made only by [`ChainPlan::new`] or
/// [`ChainPlan::with_wave`], which check that the grid covers every element (and no index
/// overflows the kernel's `int`), so [`chain`] can trust any plan it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPlan {
    n: usize,
    blocks: u32,
    one_wave_blocks: u32,
    pdl: bool,
    trigger: Trigger,
}

impl ChainPlan {
    /// Plans a chain over `n` elements on `device`: reads the SM count and the chain kernel's
    /// occupancy (two attribute queries, once, not per launch).
    pub fn new(device: Device, n: usize, pdl: ChainPdl) -> Result<ChainPlan> {
        count_i32(n, "ChainPlan::new")?;
        let config = LaunchConfig::for_elements(n, BLOCK)?;
        let per_sm = kernel::chain_step().max_active_blocks_per_sm(BLOCK, 0)?;
        let one_wave_blocks = per_sm.saturating_mul(device.sm_count()?);
        ChainPlan::with_wave(n, config.grid.x, one_wave_blocks, pdl)
    }

    /// The plan for a grid of `blocks` on a device that runs `one_wave_blocks` at once (the pure
    /// arithmetic of [`ChainPlan::new`]). A usage error unless `n` is 1 to `i32::MAX` elements and
    /// `blocks` of [`BLOCK`] threads cover them: at least `n / BLOCK` rounded up (fewer would leave
    /// elements unwritten), at most `2^31 / BLOCK` (more would overflow the kernel's `int` index).
    pub fn with_wave(n: usize, blocks: u32, one_wave_blocks: u32, pdl: ChainPdl) -> Result<ChainPlan> {
        const CALL: &str = "ChainPlan::with_wave";
        count_i32(n, CALL)?;
        let threads = u64::from(blocks) * u64::from(BLOCK);
        if threads < n as u64 {
            return Err(Error::invalid(CALL, "too few blocks: the grid would leave elements unwritten"));
        }
        if threads > 1u64 << 31 {
            return Err(Error::invalid(CALL, "too many blocks: thread indices would overflow the kernel's int"));
        }
        let (pdl, trigger) = match pdl {
            ChainPdl::Off => (false, Trigger::End),
            ChainPdl::EarlyTrigger => (true, Trigger::Start),
            ChainPdl::WaitThenTrigger => (true, Trigger::AfterWait),
            ChainPdl::LateTrigger => (true, Trigger::End),
            ChainPdl::Auto if blocks <= one_wave_blocks => (true, Trigger::Start),
            ChainPdl::Auto => (true, Trigger::End),
        };
        Ok(ChainPlan { n, blocks, one_wave_blocks, pdl, trigger })
    }

    /// Elements a kernel.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Blocks a kernel (of [`BLOCK`] threads).
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Blocks that fit on the device at once (SMs x max active blocks per SM).
    pub fn one_wave_blocks(&self) -> u32 {
        self.one_wave_blocks
    }

    /// Whether the kernels after the first launch with programmatic stream serialization (the
    /// first never does: see [`chain`]).
    pub fn pdl(&self) -> bool {
        self.pdl
    }

    /// Where blocks trigger the next kernel (meaningful when [`pdl`](Self::pdl)).
    pub fn trigger(&self) -> Trigger {
        self.trigger
    }
}

/// The most steps one [`chain`] call enqueues (each step is a kernel launch: a larger count is a
/// mistake, not a workload).
pub const MAX_CHAIN_STEPS: usize = 1 << 24;

/// The checks of a chain's arguments that are pure arithmetic, made by [`chain`] and by the C ABI
/// before anything reaches CUDA: `n` is not 0 and `steps` is 1 to [`MAX_CHAIN_STEPS`]; `n` floats at each address
/// fit in the address space; `a` and `b` are one buffer (each step in place) or do not overlap
/// (a partial overlap would make a step read elements another thread of it writes); `scale`
/// overlaps neither (each step loads `scale` before its PDL wait, while the previous step may
/// still be writing its output). Addresses only: nothing is read.
pub fn check_chain(a: *const f32, b: *const f32, scale: *const f32, n: usize, steps: usize) -> Result<()> {
    const CALL: &str = "ordo_kernels::chain";
    if n == 0 || steps == 0 {
        return Err(Error::invalid(CALL, "zero elements or zero steps"));
    }
    if steps > MAX_CHAIN_STEPS {
        return Err(Error::invalid(CALL, "more than MAX_CHAIN_STEPS (2^24) steps"));
    }
    let bytes = n.checked_mul(core::mem::size_of::<f32>()).ok_or(Error::invalid(CALL, "n * 4 overflows"))?;
    let range = |p: *const f32| {
        (p as usize)
            .checked_add(bytes)
            .map(|end| (p as usize, end))
            .ok_or(Error::invalid(CALL, "a buffer's end overflows the address space"))
    };
    let (a, b, scale) = (range(a)?, range(b)?, range(scale)?);
    let overlap = |x: (usize, usize), y: (usize, usize)| x.0 < y.1 && y.0 < x.1;
    if a != b && overlap(a, b) {
        return Err(Error::invalid(CALL, "a and b overlap without being the same buffer"));
    }
    if overlap(scale, a) || overlap(scale, b) {
        return Err(Error::invalid(CALL, "scale overlaps a or b"));
    }
    Ok(())
}

/// Runs `steps` dependent kernels `out[i] = prev[i] * scale[i] + 1` on `stream`, ping-ponging
/// between `a` and `b`: step 0 reads `a` and writes `b`, step 1 reads `b` and writes `a`, and so
/// on, so the result is in `b` after an odd number of steps and in `a` after an even one.
///
/// Each kernel loads `scale` before its PDL wait (the part that does not depend on the previous
/// step: no step writes `scale`). The first kernel is launched **without** PDL, whatever the plan:
/// its predecessor is whatever was enqueued before the call, which may have written `scale` (or
/// `a`), so it must start only once that work has completed. PDL from the first kernel on would
/// not do: a step that triggers at its start ([`Trigger::Start`]) lets the next step launch and
/// load `scale` before its own wait, so every prologue could run ahead of the predecessor. With a
/// plain first launch every later step starts after the predecessor completed. The first kernel
/// alone loses PDL's overlap.
///
/// The arguments are checked first ([`check_chain`]): 1 to [`MAX_CHAIN_STEPS`] steps; `a` and `b`
/// the same buffer or disjoint; `scale` disjoint from both. A usage error otherwise.
///
/// # Safety
/// `a`, `b` and `scale` stay allocated until the kernels complete (see the [crate docs](crate#safety)).
pub unsafe fn chain(
    stream: StreamRef<'_>,
    mut a: DeviceSliceMut<'_, f32>,
    mut b: DeviceSliceMut<'_, f32>,
    scale: DeviceSlice<'_, f32>,
    steps: usize,
    plan: &ChainPlan,
) -> Result<()> {
    const CALL: &str = "ordo_kernels::chain";
    if a.len() != plan.n || b.len() != plan.n || scale.len() != plan.n {
        return Err(Error::invalid(CALL, "a, b and scale must all have the plan's length"));
    }
    check_chain(a.as_slice().as_ptr(), b.as_slice().as_ptr(), scale.as_ptr(), plan.n, steps)?;
    // The plan's constructors checked n and the grid; this converts, and cannot fail for a plan.
    let n = count_i32(plan.n, CALL)?;
    let first = LaunchConfig::new(plan.blocks, BLOCK);
    let rest = first.with_pdl(plan.pdl);
    let trigger = plan.trigger as i32;
    let step = kernel::chain_step();
    for k in 0..steps {
        let (prev, out) = if k % 2 == 0 { (a.as_slice(), b.reborrow()) } else { (b.as_slice(), a.reborrow()) };
        let config = if k == 0 { &first } else { &rest };
        // SAFETY: every view holds n elements, which the plan's grid covers without overflowing
        // an int; the kernels that may overlap one another under PDL never write `scale` (see
        // above); the caller owes the lifetimes.
        unsafe { step.launch(stream, config, (prev.as_ptr(), out.as_mut_ptr(), scale.as_ptr(), n, trigger))? };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(r: Result<()>) -> bool {
        matches!(r, Err(Error::Usage(_)))
    }

    #[test]
    fn steps_and_overlaps_are_checked_as_arithmetic() {
        let buf = [0f32; 64];
        let p = buf.as_ptr();
        // SAFETY: offsets inside `buf`; only the addresses are compared.
        let (a, b, s) = unsafe { (p, p.add(16), p.add(32)) };
        assert!(check_chain(a, b, s, 16, 1).is_ok());
        assert!(check_chain(a, a, s, 16, MAX_CHAIN_STEPS).is_ok(), "in place");
        assert!(check_chain(b, a, s, 16, 3).is_ok(), "adjacent, either order");
        assert!(usage(check_chain(a, b, s, 16, 0)), "zero steps");
        assert!(usage(check_chain(a, b, s, 16, MAX_CHAIN_STEPS + 1)));
        assert!(usage(check_chain(a, b, s, 0, 1)), "zero elements");
        assert!(usage(check_chain(a, b, a, 16, 1)), "scale is a");
        // SAFETY: as above.
        unsafe {
            assert!(usage(check_chain(a, b, b.add(15), 16, 1)), "scale's start inside b");
            assert!(usage(check_chain(a, b, a.add(15), 16, 1)), "scale's first element is a's last");
            assert!(usage(check_chain(a, a.add(1), s, 16, 1)), "a and b overlap");
            assert!(usage(check_chain(a.add(4), a, s, 16, 1)), "b before a, overlapping");
            assert!(check_chain(a, b, b.add(16), 16, 1).is_ok(), "scale right after b's end");
        }
        let end = (usize::MAX - 8) as *const f32;
        assert!(usage(check_chain(end, b, s, 16, 1)), "a range past the address space");
        assert!(usage(check_chain(a, b, s, usize::MAX / 2, 1)), "n * 4 overflows");
    }

    #[test]
    fn chain_refuses_overlapping_views_before_cuda() {
        let mut host = [0f32; 64];
        let base = host.as_mut_ptr();
        let plan = ChainPlan::with_wave(16, 1, 1, ChainPdl::Auto).unwrap();
        // SAFETY: every call below is refused before CUDA is reached (nothing is enqueued and the
        // host memory behind the views is never touched); the stream is used on this thread only.
        unsafe {
            let s = StreamRef::per_thread_default();
            let a = DeviceSliceMut::from_raw_parts(base, 16);
            let b = DeviceSliceMut::from_raw_parts(base.add(8), 16);
            let scale = DeviceSlice::from_raw_parts(base.add(40), 16);
            assert!(usage(chain(s, a, b, scale, 1, &plan)), "a and b overlap");
            let a = DeviceSliceMut::from_raw_parts(base, 16);
            let b = DeviceSliceMut::from_raw_parts(base.add(16), 16);
            let scale = DeviceSlice::from_raw_parts(base.add(20), 16);
            assert!(usage(chain(s, a, b, scale, 1, &plan)), "scale inside b");
            let a = DeviceSliceMut::from_raw_parts(base, 16);
            let b = DeviceSliceMut::from_raw_parts(base.add(16), 16);
            let scale = DeviceSlice::from_raw_parts(base.add(32), 16);
            assert!(usage(chain(s, a, b, scale, 0, &plan)), "zero steps");
        }
    }
}
