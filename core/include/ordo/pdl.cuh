// ordo/pdl.cuh: Programmatic Dependent Launch (PDL) for device code, with one kernel body that
// yields a PDL form and a plain form.
//
// Why two forms. A kernel that merely *contains* griddepcontrol.wait (cudaGridDependencySynchronize)
// is much slower in grids of several waves, even when it is launched without the PDL attribute,
// and no trigger placement wins that back (ordo's docs/cuda-behaviours.md, CB-23). In a grid of at
// most one wave the wait costs nothing and PDL hides the launch latency (a chain of small kernels in
// a graph: 0.6x the plain form; the figures are in BENCHMARKS.md, "PDL against the best plain
// form"). So a kernel that can use PDL is
// compiled twice: the plain form has no griddepcontrol instruction at all, and ordo's launch
// (ordo_core::launch::PdlKernel in Rust, ordo_pdl_plan_launch in C) launches the PDL form over the
// full grid when that fits in one wave; larger work runs as a one-wave grid-stride grid, in the
// PDL form up to four waves of work and in the plain form past them (past a few waves the PDL
// one-wave grid cost more than it saved: BENCHMARKS.md, "Why four waves"). Write the body as a
// grid-stride loop so that both grid shapes are correct.
//
// Use:
//   template <class Pdl>
//   __device__ __forceinline__ void scale_body(const float* in, float* out, int n) {
//       Pdl::trigger();  // the next kernel may start launching (orders no memory)
//       Pdl::wait();     // everything the previous kernel wrote is visible after this
//       // Unsigned: with an int index, `i += stride` wraps negative past 2^31 and still passes
//       // `i < n` (ordo's plans go up to n = 2^31 elements).
//       for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
//           out[i] = 2.0f * in[i];
//   }
//   ORDO_PDL_KERNELS(my_scale, (const float* in, float* out, int n), (in, out, n))
// defines extern "C" __global__ my_scale (plain: Pdl::wait and Pdl::trigger compile to nothing)
// and my_scale_pdl (they compile to griddepcontrol.wait and griddepcontrol.launch_dependents).
//
// On sm_90 and later the PDL form's calls compile to griddepcontrol instructions; below sm_90
// (where ptxas rejects them) to nothing, so one source serves every target. Launched without the
// PDL attribute (programmatic stream serialization) they are no-ops, but still cost what is said
// above in grids of several waves.
//
//   wait():    blocks until the previous kernel in the stream has completed and its memory writes
//              are visible. Everything the kernel reads from the previous kernel must be read after
//              this call; work before it overlaps the previous kernel's tail.
//   trigger(): lets the next kernel start launching (its blocks begin their prologue). It orders
//              no memory. In a grid of at most one wave, triggering at the start is best (ordo-bench,
//              group pdl).
#pragma once

__device__ __forceinline__ void ordo_pdl_wait() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
    cudaGridDependencySynchronize();
#endif
}

__device__ __forceinline__ void ordo_pdl_trigger() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

namespace ordo {
namespace pdl {

// The plain form: no griddepcontrol instruction is emitted.
struct off {
    static constexpr bool enabled = false;
    __device__ static __forceinline__ void wait() {}
    __device__ static __forceinline__ void trigger() {}
};

// The PDL form.
struct on {
    static constexpr bool enabled = true;
    __device__ static __forceinline__ void wait() { ordo_pdl_wait(); }
    __device__ static __forceinline__ void trigger() { ordo_pdl_trigger(); }
};

}  // namespace pdl
}  // namespace ordo

// Defines the two forms of the body template NAME##_body<Pdl>: extern "C" kernels NAME (plain)
// and NAME##_pdl. PARAMS is the parenthesised parameter list, ARGS the parenthesised arguments.
#define ORDO_PDL_KERNELS(NAME, PARAMS, ARGS)                                                      \
    extern "C" __global__ void NAME PARAMS { NAME##_body<ordo::pdl::off> ARGS; }                  \
    extern "C" __global__ void NAME##_pdl PARAMS { NAME##_body<ordo::pdl::on> ARGS; }
