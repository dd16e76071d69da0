//! The engine's own kernels, written in PTX by hand so that nothing here needs nvcc to build: the
//! driver compiles them for the device when they are loaded ([`ordo_cuda_core::library::Library`],
//! JIT from PTX ISA 7.0 for `sm_70` and later). Three kernels:
//!
//! - `ordo_measure_timestamps(u64* out)`: nvbench's timestamps kernel (`timestamps_kernel.cu`),
//!   launched over one block a SM; the block that runs on SM 0 writes `%globaltimer` to `out[0]` and
//!   `%clock64` to `out[1]`. Two of them around a sample give the SM clock during it
//!   ([`crate::throttle`]).
//! - `ordo_measure_block(const volatile u32* flag, volatile u32* timed_out, u64 timeout_ns)`:
//!   nvbench's blocking kernel (`blocking_kernel.cu`): spins until the host sets `*flag` (mapped
//!   host memory), so that launches enqueued behind it wait until the host has enqueued them all
//!   and the GPU runs them back to back. After `timeout_ns` of `%globaltimer` it sets `*timed_out`
//!   and returns, so that a host that cannot enqueue (a full launch queue) never hangs the GPU.
//! - `ordo_measure_spin(u64 ns)`: spins `ns` nanoseconds of `%globaltimer` (ordo-bench's
//!   `bl_spin`): a kernel of known duration.

/// The helper module's PTX.
pub const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry ordo_measure_timestamps(
	.param .u64 out
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<4>;

	mov.u32 	%r1, %smid;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	TS_DONE;
	ld.param.u64 	%rd1, [out];
	cvta.to.global.u64 	%rd1, %rd1;
	mov.u64 	%rd2, %globaltimer;
	mov.u64 	%rd3, %clock64;
	st.volatile.global.u64 	[%rd1], %rd2;
	st.volatile.global.u64 	[%rd1+8], %rd3;
TS_DONE:
	ret;
}

.visible .entry ordo_measure_block(
	.param .u64 flag,
	.param .u64 timed_out,
	.param .u64 timeout_ns
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [flag];
	cvta.to.global.u64 	%rd1, %rd1;
	ld.param.u64 	%rd2, [timed_out];
	cvta.to.global.u64 	%rd2, %rd2;
	ld.param.u64 	%rd3, [timeout_ns];
	mov.u64 	%rd4, %globaltimer;
BLOCK_SPIN:
	ld.volatile.global.u32 	%r1, [%rd1];
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	BLOCK_DONE;
	mov.u64 	%rd5, %globaltimer;
	sub.u64 	%rd6, %rd5, %rd4;
	setp.lt.u64 	%p2, %rd6, %rd3;
	@%p2 bra 	BLOCK_SPIN;
	mov.u32 	%r2, 1;
	st.volatile.global.u32 	[%rd2], %r2;
	membar.sys;
BLOCK_DONE:
	ret;
}

.visible .entry ordo_measure_spin(
	.param .u64 ns
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [ns];
	mov.u64 	%rd2, %globaltimer;
SPIN_LOOP:
	mov.u64 	%rd3, %globaltimer;
	sub.u64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	SPIN_LOOP;
	ret;
}
"#;

/// The timestamps kernel's name.
pub const TIMESTAMPS: &core::ffi::CStr = c"ordo_measure_timestamps";
/// The blocking kernel's name.
pub const BLOCK: &core::ffi::CStr = c"ordo_measure_block";
/// The spin kernel's name.
pub const SPIN: &core::ffi::CStr = c"ordo_measure_spin";
