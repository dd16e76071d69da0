//! A chain of dependent kernels with Programmatic Dependent Launch, planned by ordo's PDL rule so
//! that PDL never makes it slower than the plain chain a user writes without PDL.
//!
//! Each step is `out[i] = prev[i] * scale[i] + 1`, one body compiled in two forms
//! ([`kernel::chain_step`]): the plain form has no `griddepcontrol`
//! instruction, the PDL form waits and triggers. [`PdlMode::Auto`] launches the PDL form over the
//! full grid when it fits in one wave, and larger work as a one-wave grid-stride grid: the PDL
//! form up to four waves of work, the plain form past them (the rule and the measurements behind
//! it: [`ordo_cuda_core::launch::pdl`]).
//!
//! The baseline of every PDL figure is the plain form, launched as a user launches it without PDL
//! ([`PdlMode::Plain`], one element a thread) or as a one-wave grid-stride grid
//! ([`PdlMode::PlainOneWave`]), whichever is faster: never a PDL-capable kernel with the attribute
//! off, which pays for the wait in grids of several waves.

use crate::{kernel, BLOCK};
use ordo_cuda_core::launch::{PdlMode, PdlPlan};
use ordo_cuda_core::{Device, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

/// A planned chain: its length and the [`PdlPlan`] of its steps. Made only by [`ChainPlan::new`]
/// or [`ChainPlan::with_wave`], which check that `n` is 1 to `i32::MAX` and that the full grid's
/// thread indices fit the kernel's index, so [`chain`] can trust any plan it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPlan {
    n: usize,
    plan: PdlPlan,
}

impl ChainPlan {
    /// Plans a chain over `n` elements on `device`: reads the SM count and the chain kernel's
    /// occupancy (a few attribute queries, once, not per launch).
    pub fn new(device: Device, n: usize, mode: PdlMode) -> Result<ChainPlan> {
        crate::count_i32(n, "ChainPlan::new")?;
        let plan = kernel::chain_step().plan(device, n, BLOCK, mode)?;
        Ok(ChainPlan { n, plan })
    }

    /// The plan for a device that runs `one_wave_blocks` blocks of [`BLOCK`] threads at once (the
    /// pure arithmetic of [`ChainPlan::new`]). A usage error unless `n` is 1 to `i32::MAX`.
    pub fn with_wave(n: usize, one_wave_blocks: u32, mode: PdlMode) -> Result<ChainPlan> {
        crate::count_i32(n, "ChainPlan::with_wave")?;
        let plan = PdlPlan::for_elements(n, BLOCK, one_wave_blocks, mode, Default::default())?;
        Ok(ChainPlan { n, plan })
    }

    /// Elements a kernel.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The launch plan of every step (form, grid).
    pub fn launch_plan(&self) -> &PdlPlan {
        &self.plan
    }

    /// Blocks a kernel (of [`BLOCK`] threads).
    pub fn blocks(&self) -> u32 {
        self.plan.grid()
    }

    /// Blocks that fit on the device at once (SMs x max active blocks per SM).
    pub fn one_wave_blocks(&self) -> u32 {
        self.plan.one_wave_blocks()
    }

    /// Whether the steps after the first launch the PDL form with programmatic stream
    /// serialization (the first never overlaps its predecessor: see [`chain`]).
    pub fn pdl(&self) -> bool {
        self.plan.uses_pdl()
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
    const CALL: &str = "ordo_cuda_kernels::chain";
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
/// not do: the PDL form triggers at its start, which lets the next step launch and load `scale`
/// before its own wait, so every prologue could run ahead of the predecessor. With a
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
    const CALL: &str = "ordo_cuda_kernels::chain";
    if a.len() != plan.n || b.len() != plan.n || scale.len() != plan.n {
        return Err(Error::invalid(CALL, "a, b and scale must all have the plan's length"));
    }
    check_chain(a.as_slice().as_ptr(), b.as_slice().as_ptr(), scale.as_ptr(), plan.n, steps)?;
    // The plan's constructors checked n and the grid; this converts, and cannot fail for a plan.
    let n = crate::count_i32(plan.n, CALL)?;
    let step = kernel::chain_step();
    for k in 0..steps {
        let (prev, out) = if k % 2 == 0 { (a.as_slice(), b.reborrow()) } else { (b.as_slice(), a.reborrow()) };
        // SAFETY: every view holds n elements, which the body's grid-stride loop covers over any
        // grid and indexes without overflow (the plan checked n); the kernels that may overlap
        // one another under PDL never write `scale`, and the first is launched without the PDL
        // attribute (see above); the caller owes the lifetimes.
        unsafe {
            step.launch(stream, &plan.plan, k > 0, (prev.as_ptr(), out.as_mut_ptr(), scale.as_ptr(), n))?;
        }
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
        let plan = ChainPlan::with_wave(16, 1, PdlMode::Auto).unwrap();
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
