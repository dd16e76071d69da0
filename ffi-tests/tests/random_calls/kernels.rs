//! ordo's kernels through the C ABI: `ordo_gemv_normalize`(`_with`), `ordo_frame_filter`(`_with`),
//! `ordo_pdl_chain`, `ordo_pdl_plan_launch` and `ordo_launch_kernel` (of ordo's chain step); and
//! their refusals before CUDA.

use crate::fuzz::*;
use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

impl Fuzz<'_> {
    /// `ordo_gemv_normalize` or its `_with` form on random pointers, shapes and options.
    pub(crate) fn gemv_normalize(&mut self, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let (ka, kx, ky) = (self.ptr_kind(), self.ptr_kind(), self.ptr_kind());
        let (a, x, y) = (self.device_ptr(ka), self.device_ptr(kx), self.device_ptr(ky));
        let (rows, cols) = (self.rng.size(64), self.rng.size(64));
        let mut buf = [0u64; 4];
        let (options, bad_options) = self.alloc_options(&mut buf);
        let with = self.rng.chance(2);
        let st = if with {
            self.record(unsafe { ordo_gemv_normalize_with(options, stream, a, x, y, rows, cols) }, "gemv_with")
        } else {
            self.record(unsafe { ordo_gemv_normalize(stream, a, x, y, rows, cols) }, "gemv")
        };
        if with && bad_options {
            assert_eq!(st, ia, "gemv_with: bad options");
            return;
        }
        let bad_ptr = [ka, kx, ky].iter().any(|k| matches!(k, Ptr::Null | Ptr::Misaligned));
        let bad_size = rows.checked_mul(cols).is_none_or(|c| c.checked_mul(4).is_none() || c > isize::MAX as usize / 4)
            || rows == 0
            || cols == 0
            || rows > 1 << 26
            || cols > (1 << 31) - 32;
        if bad_ptr || bad_size || stream.is_null() {
            assert_eq!(st, ia, "gemv: bad argument");
        } else if gpu && [ka, kx, ky].contains(&Ptr::Pageable) {
            assert_eq!(legacy_conflict(st, stream, ia), ia, "gemv: host memory");
        } else if gpu && rows != 0 && cols != 0 && rows * cols <= CAP && rows <= CAP {
            assert_eq!(legacy_conflict(st, stream, ORDO_SUCCESS), ORDO_SUCCESS, "gemv valid ({rows} x {cols})");
        }
    }

    /// `ordo_frame_filter` or its `_with` form on random pointers, sizes and options.
    pub(crate) fn frame_filter(&mut self, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let (ki, ko) = (self.ptr_kind(), self.ptr_kind());
        let (rgb, out) = (self.device_ptr(ki).cast::<u8>(), self.device_ptr(ko).cast::<u8>());
        let (w, h) = (self.rng.size(32), self.rng.size(32));
        let mut buf = [0u64; 4];
        let (options, bad_options) = self.alloc_options(&mut buf);
        let with = self.rng.chance(2);
        let st = if with {
            self.record(unsafe { ordo_frame_filter_with(options, stream, rgb, out, w, h) }, "frame_filter_with")
        } else {
            self.record(unsafe { ordo_frame_filter(stream, rgb, out, w, h) }, "frame_filter")
        };
        if with && bad_options {
            assert_eq!(st, ia, "frame_filter_with: bad options");
            return;
        }
        let bad_ptr = [ki, ko].contains(&Ptr::Null);
        let bad_size = w.checked_mul(h).and_then(|p| p.checked_mul(3)).is_none_or(|b| b > isize::MAX as usize);
        if bad_ptr || bad_size || stream.is_null() {
            assert_eq!(st, ia, "frame: bad argument");
        } else if gpu && [ki, ko].contains(&Ptr::Pageable) {
            assert_eq!(legacy_conflict(st, stream, ia), ia, "frame: host memory");
        } else if gpu && w * h * 3 <= CAP * 4 && w * h > 0 {
            assert_eq!(legacy_conflict(st, stream, ORDO_SUCCESS), ORDO_SUCCESS, "frame valid ({w} x {h})");
        }
    }

    /// `ordo_pdl_chain` on random pointers (the same buffer as scale and as a or b among them),
    /// sizes, steps and PDL flags.
    pub(crate) fn pdl_chain(&mut self, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let (ka, kb, ks) = (self.ptr_kind(), self.ptr_kind(), self.ptr_kind());
        let (a, b, sc) = (self.device_ptr(ka), self.device_ptr(kb), self.device_ptr(ks));
        let n = self.rng.size(CAP);
        let pdl = self.rng.below(4) as i32 - 1;
        let steps = self.rng.below(5) as usize;
        let st = self.record(unsafe { ordo_pdl_chain(stream, a, b, sc, n, steps, pdl) }, "pdl_chain");
        // Distinct buffers never overlap for n <= CAP; the same one given as scale and as a
        // or b does.
        let overlap = n <= CAP && (sc == a || sc == b);
        let bad = [ka, kb, ks].iter().any(|k| matches!(k, Ptr::Null | Ptr::Misaligned))
            || !(0..=1).contains(&pdl)
            || n > isize::MAX as usize / 4
            || steps == 0
            || overlap;
        if bad || stream.is_null() {
            assert_eq!(st, ia, "chain: bad argument");
        } else if gpu && ![ka, kb, ks].contains(&Ptr::Pageable) && n > 0 && n <= CAP {
            assert_eq!(legacy_conflict(st, stream, ORDO_SUCCESS), ORDO_SUCCESS, "chain valid (n {n})");
        }
    }

    /// `ordo_pdl_plan_launch` with random kernels, device, sizes, mode and output.
    pub(crate) fn pdl_plan_launch(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let step = ordok_chain_step as unsafe extern "C" fn(_, _, _, _) as *const c_void;
        let step_pdl = ordok_chain_step_pdl as unsafe extern "C" fn(_, _, _, _) as *const c_void;
        let kernel = |r: u64| match r {
            0 => null(),
            1 => step_pdl,
            _ => step,
        };
        let (plain, pdl) = (kernel(self.rng.below(8)), kernel(1 + self.rng.below(8) % 2 * 7));
        let device = match self.rng.below(8) {
            0 => -1,
            1 => 1 + self.rng.below(8) as i32,
            2 => i32::MAX,
            _ => 0,
        };
        let n = self.rng.size(1 << 26);
        let block = match self.rng.below(6) {
            0 => 0,
            1 => 1025 + self.rng.below(4096) as u32,
            2 => 1 + self.rng.below(1024) as u32,
            _ => 256,
        };
        let mode = self.rng.below(9) as i32 - 1;
        let mut out = [OrdoPdlPlan { size: 0, use_pdl_form: 7, grid: 7, full_blocks: 7, one_wave_blocks: 7 }; 2];
        let size = match self.rng.below(6) {
            0 => 0,
            1 => core::mem::size_of::<OrdoPdlPlan>() - 1,
            2 => core::mem::size_of::<OrdoPdlPlan>() + 16,
            _ => core::mem::size_of::<OrdoPdlPlan>(),
        };
        out[0].size = size;
        let (ptr, bad_out) = match self.rng.below(10) {
            0 => (null_mut(), true),
            1 => (unsafe { out.as_mut_ptr().cast::<u8>().add(4).cast::<OrdoPdlPlan>() }, true),
            _ => (out.as_mut_ptr(), size < core::mem::size_of::<OrdoPdlPlan>()),
        };
        let st = self.record(unsafe { ordo_pdl_plan_launch(plain, pdl, device, n, block, mode, ptr) }, "pdl_plan");
        let threads = (n as u128).div_ceil(u128::from(block.max(1))) * u128::from(block);
        let bad = bad_out
            || plain.is_null()
            || pdl.is_null()
            || device < 0
            || n == 0
            || block == 0
            || block > 1024
            || threads > 1 << 31
            || !(0..=5).contains(&mode);
        if bad {
            assert_eq!(st, ia, "pdl_plan: bad argument");
            assert_eq!(out[0].grid, 7, "nothing written on an error");
        } else if self.gpu && device == 0 {
            assert_eq!(st, ORDO_SUCCESS, "pdl_plan valid (n {n}, block {block}, mode {mode})");
            let p = out[0];
            assert_eq!(p.size, size, "the caller's size is kept");
            assert!(p.use_pdl_form <= 1 && p.one_wave_blocks >= 1, "{p:?}");
            assert!(p.grid >= 1 && p.grid <= p.full_blocks, "{p:?}");
            assert_eq!(u128::from(p.full_blocks), (n as u128).div_ceil(u128::from(block)));
        } else if st != ORDO_SUCCESS {
            assert_eq!(ordo_status_is_sticky(st), 0, "pdl_plan: {st} sticky");
        }
    }

    /// `ordo_launch_kernel` of the chain step over device buffers with a random configuration (now
    /// and then the third layout's domain and preferred cluster, valid or not): the kernel is a
    /// grid-stride loop over `n <= CAP` elements, correct over any grid.
    pub(crate) fn launch_kernel(&mut self, stream: sys::cudaStream_t, capturing: bool) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let step = ordok_chain_step as unsafe extern "C" fn(_, _, _, _) as *const c_void;
        let step_pdl = ordok_chain_step_pdl as unsafe extern "C" fn(_, _, _, _) as *const c_void;
        let kernel = match self.rng.below(10) {
            0 => null(),
            1..=4 => step_pdl,
            _ => step,
        };
        // prev, out and scale: three different device buffers (out never aliases the inputs).
        let d = &self.mem.device;
        let (mut prev, mut out, mut scale) = (d[0] as *const f32, d[1] as *mut f32, d[2] as *const f32);
        let mut n = 1 + self.rng.below(CAP as u64) as i32;
        let mut args: [*mut c_void; 4] = [
            (&mut prev as *mut *const f32).cast(),
            (&mut out as *mut *mut f32).cast(),
            (&mut scale as *mut *const f32).cast(),
            (&mut n as *mut i32).cast(),
        ];
        let dim = |rng: &mut Rng, big: u32| match rng.below(12) {
            0 => 0,
            1 => big,
            2 | 3 => 2,
            4 => 1 + rng.below(8) as u32,
            _ => 1,
        };
        let mut grid = [dim(&mut self.rng, 1 << 16), dim(&mut self.rng, 70_000), dim(&mut self.rng, 70_000)];
        let block = match self.rng.below(8) {
            0 => [0, 1, 1],
            1 => [2048, 1, 1],
            2 => [32, 32, 2],
            3 => [1 + self.rng.below(1024) as u32, 1, 1],
            _ => [256, 1, 1],
        };
        let cluster = match self.rng.below(6) {
            0 => [2, 1, 1],
            1 => [3, 1, 1],
            2 => [1 + self.rng.below(16) as u32, 1, 1],
            _ => [0, 0, 0],
        };
        let cooperative = i32::from(!capturing && self.rng.chance(6));
        let mem_sync_domain = match self.rng.below(8) {
            0 => ORDO_MEM_SYNC_DOMAIN_DEFAULT,
            1 => ORDO_MEM_SYNC_DOMAIN_REMOTE,
            2 => [3, -1, i32::MAX][self.rng.below(3) as usize],
            _ => 0,
        };
        // Mostly twice the cluster in x (none where there is no cluster); sometimes any. Half the
        // time the grid is made a multiple of it, so that valid ones are common.
        let preferred_cluster = match self.rng.below(6) {
            0 | 1 => [cluster[0] * 2, cluster[1], cluster[2]],
            2 => [1 + self.rng.below(8) as u32, 1, 1],
            _ => [0, 0, 0],
        };
        if preferred_cluster[0] != 0 && self.rng.chance(2) {
            grid[0] = grid[0].next_multiple_of(preferred_cluster[0]);
        }
        let mut config = [OrdoLaunchConfig {
            size: core::mem::size_of::<OrdoLaunchConfig>(),
            grid,
            block,
            shared_mem_bytes: if self.rng.chance(8) { 1 << (10 + self.rng.below(12)) } else { 0 },
            pdl: i32::from(self.rng.chance(2)),
            has_priority: i32::from(self.rng.chance(3)),
            priority: self.rng.below(12) as i32 - 6,
            cluster,
            cooperative,
            programmatic_event: null_mut(),
            programmatic_event_at_block_start: i32::from(self.rng.chance(2)),
            launch_completion_event: null_mut(),
            mem_sync_domain,
            preferred_cluster,
        }; 2];
        // Real events (without timing, as CUDA wants), outside captures: a forged handle would be
        // the C caller's broken contract, not input ordo can check.
        let event = if !capturing && self.gpu && self.rng.chance(4) {
            let mut e = null_mut();
            cuda(raw(|| unsafe { sys::cudaEventCreateWithFlags(&mut e, sys::cudaEventDisableTiming) }), "event");
            if self.rng.chance(2) {
                config[0].programmatic_event = e;
            } else {
                config[0].launch_completion_event = e;
            }
            e
        } else {
            null_mut()
        };
        if self.rng.chance(10) {
            config[0].size = self.rng.below(core::mem::size_of::<OrdoLaunchConfig>() as u64) as usize;
        }
        let (ptr, bad_ptr) = match self.rng.below(12) {
            0 => (null(), true),
            1 => (unsafe { config.as_ptr().cast::<u8>().add(4).cast::<OrdoLaunchConfig>() }, true),
            _ => (config.as_ptr(), false),
        };
        let c = config[0];
        let threads: u64 = c.block.iter().map(|&b| u64::from(b)).product();
        let full = core::mem::size_of::<OrdoLaunchConfig>();
        let layout =
            [ORDO_LAUNCH_CONFIG_FIRST_SIZE, ORDO_LAUNCH_CONFIG_SECOND_SIZE].contains(&c.size) || c.size >= full;
        // The third layout's fields are read only at its size or more.
        let domain = if c.size >= full { c.mem_sync_domain } else { 0 };
        let preferred = if c.size >= full { c.preferred_cluster } else { [0, 0, 0] };
        let divides = |d: [u32; 3], of: [u32; 3]| !d.contains(&0) && (0..3).all(|i| of[i].is_multiple_of(d[i]));
        let clustered = c.cluster != [0, 0, 0];
        // What ordo refuses before it looks at the preferred cluster (`LaunchConfig::validate`'s order).
        let bad_before_preferred = bad_ptr
            || kernel.is_null()
            || stream.is_null()
            || !layout
            || !(0..=ORDO_MEM_SYNC_DOMAIN_REMOTE).contains(&domain)
            || c.grid.contains(&0)
            || c.grid[1] > 65_535
            || c.grid[2] > 65_535
            || c.block.contains(&0)
            || threads > 1024
            || (clustered && !divides(c.cluster, c.grid));
        let with_preferred = !bad_before_preferred && preferred != [0, 0, 0];
        // Headers before CUDA 12.8: preferred clusters are not supported, whatever their value.
        let not_supported = with_preferred && !cfg!(cuda_12_8);
        let bad = bad_before_preferred
            || (with_preferred
                && !not_supported
                && (!clustered || !divides(c.cluster, preferred) || !divides(preferred, c.grid)))
            || (!not_supported && clustered && c.cooperative != 0);
        // A capture is only given launches that ordo refuses or CUDA takes, so that the caller's
        // capture stays valid (the fuzz checks it after each call).
        if capturing && !bad && !not_supported && (c.shared_mem_bytes != 0 || clustered) {
            return;
        }
        let st = self.record(unsafe { ordo_launch_kernel(stream, kernel, args.as_mut_ptr(), ptr) }, "launch_kernel");
        if !event.is_null() {
            // Destroying an event with its record still pending is allowed: CUDA releases it when
            // the record completes.
            raw(|| unsafe { sys::cudaEventDestroy(event) });
        }
        if bad {
            assert_eq!(st, ia, "launch_kernel: bad argument ({c:?})");
        } else if not_supported {
            assert_eq!(st, ORDO_ERROR_NOT_SUPPORTED, "launch_kernel: a preferred cluster before CUDA 12.8 ({c:?})");
        } else if st != ORDO_SUCCESS {
            // CUDA's refusals (too much shared memory, too large a cluster or cooperative grid, a
            // preferred cluster whose z is not the cluster's): its code, never sticky.
            assert_eq!(ordo_status_is_sticky(st), 0, "launch_kernel: {st} sticky ({c:?})");
            // A domain needs nothing of the device that a plain launch does not.
            let plain = c.shared_mem_bytes == 0 && !clustered && c.cooperative == 0;
            if self.gpu && plain {
                assert_eq!(legacy_conflict(st, stream, ORDO_SUCCESS), ORDO_SUCCESS, "launch_kernel valid ({c:?})");
            }
        }
    }
}

/// The kernels index in 32 bits: `ordo_gemv_normalize` refuses the shapes they cannot index
/// (2^26 + 1 rows would make the gemv kernel's `int` thread index wrap negative), before CUDA.
#[test]
fn gemv_shapes_past_the_kernels_int_indexing_are_refused_before_cuda() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let legacy = sys::cudaStreamLegacy();
    let mut f = [0f32; 4];
    let p = f.as_mut_ptr();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    for (rows, cols) in
        [((1 << 26) + 1, 1), (1 << 27, 1), (1 << 31, 1), (1, (1 << 31) - 31), (1, 1 << 31), (0, 4), (4, 0)]
    {
        assert_eq!(unsafe { ordo_gemv_normalize(legacy, p, p, p, rows, cols) }, ia, "{rows} x {cols}");
    }
    // The largest shapes the kernels take pass the checks (and stop at CUDA here: no driver, or
    // host memory where device memory is needed).
    for (rows, cols) in [(1 << 26, 1), (1, (1 << 31) - 32)] {
        let st = unsafe { ordo_gemv_normalize(legacy, p, p, p, rows, cols) };
        assert!(is_documented(st), "{st}");
        if !gpu() {
            assert_ne!(st, ia, "{rows} x {cols}: refused by the size checks");
        }
    }
}

/// `ordo_pdl_chain` refuses zero and absurd step counts and overlapping buffers before CUDA: a
/// step reads `scale` before waiting for the previous one, so `scale` must not be an output, and
/// `a`/`b` must be one buffer or disjoint.
#[test]
fn pdl_chain_refuses_zero_steps_too_many_and_overlaps_before_cuda() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let legacy = sys::cudaStreamLegacy();
    let mut f = [0f32; 64];
    let base = f.as_mut_ptr();
    let (a, b, scale) = unsafe { (base, base.add(16), base.add(32)) };
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    unsafe {
        assert_eq!(ordo_pdl_chain(legacy, a, b, scale, 16, 0, 0), ia, "zero steps");
        assert_eq!(ordo_pdl_chain(legacy, a, b, scale, 16, (1 << 24) + 1, 0), ia, "over 2^24 steps");
        assert_eq!(ordo_pdl_chain(legacy, a, b, scale, 0, 1, 0), ia, "zero elements");
        assert_eq!(ordo_pdl_chain(legacy, a, b, a, 16, 1, 0), ia, "scale is a");
        assert_eq!(ordo_pdl_chain(legacy, a, b, b.add(15), 16, 1, 0), ia, "scale inside b");
        assert_eq!(ordo_pdl_chain(legacy, a, b, a.add(8), 16, 1, 1), ia, "scale inside a");
        assert_eq!(ordo_pdl_chain(legacy, a, a.add(1), scale, 16, 1, 0), ia, "a and b overlap");
        assert_eq!(ordo_pdl_chain(legacy, b, a.add(4), scale, 16, 1, 0), ia, "b before a, overlapping");
        let end = (usize::MAX - 8) as *mut f32;
        assert_eq!(ordo_pdl_chain(legacy, end, b, scale, 16, 1, 0), ia, "a range past the address space");
        // In place (a == b) and adjacent ranges are fine: the checks pass, CUDA decides.
        for (x, y, s) in [(a, a, scale), (a, b, scale), (a, b, b.add(16))] {
            let st = ordo_pdl_chain(legacy, x, y, s, 16, 1 << 24, 0);
            assert!(is_documented(st));
            if !gpu() {
                assert_ne!(st, ia, "refused by the argument checks");
            }
        }
    }
}
