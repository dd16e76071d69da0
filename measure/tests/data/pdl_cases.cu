// Kernel pairs for `ordo-measure check` (docs/check.md): producers A and consumers B, launched A
// then B with programmatic stream serialization (PDL). Each B either waits (griddepcontrol.wait)
// before it touches memory A writes or reads, or carries one seeded bug. The checked-in PTX
// (pdl_cases.ptx) is nvcc's output for sm_90, made from the repository's root with
//
//   nvcc -arch=sm_90 -ptx -I core/include -o measure/tests/data/pdl_cases.ptx measure/tests/data/pdl_cases.cu
//
// Producers (A), out[i] = in[i] * 2 + 1 over n floats, a grid-stride loop:
//   produce_early     triggers the dependent launch at its start (safe; reported as early)
//   produce_late      triggers after its last store
//   produce_plain     never triggers (B is released as A's blocks exit)
// Consumers (B), out[i] = prev[i] * scale[i] + 1 (prev is A's output):
//   consume           reads scale (A does not write it) before its wait, prev after: correct
//   consume_raw       reads prev before its wait: a read of A's output (RAW)
//   consume_war       zeroes `a_in` (A's input) before its wait: a write of memory A reads (WAR)
//   consume_some      waits only in even blocks: odd blocks read prev without waiting
//   consume_never     never waits
//   consume_indirect  reads through a pointer loaded from memory before its wait (may be global)
//   scale, scale_pdl  ordo/pdl.cuh's two forms of one body (ORDO_PDL_KERNELS): correct
#include <ordo/pdl.cuh>

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

__device__ __forceinline__ unsigned stride() { return gridDim.x * blockDim.x; }
__device__ __forceinline__ unsigned first() { return blockIdx.x * blockDim.x + threadIdx.x; }

extern "C" __global__ void produce_early(const float* in, float* out, int n) {
    pdl_trigger();
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = in[i] * 2.0f + 1.0f;
}

extern "C" __global__ void produce_late(const float* in, float* out, int n) {
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = in[i] * 2.0f + 1.0f;
    pdl_trigger();
}

extern "C" __global__ void produce_plain(const float* in, float* out, int n) {
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = in[i] * 2.0f + 1.0f;
}

extern "C" __global__ void consume(const float* prev, const float* scale, float* out, int n) {
    unsigned i = first();
    float s = i < (unsigned)n ? scale[i] : 0.0f;
    pdl_wait();
    if (i < (unsigned)n) out[i] = prev[i] * s + 1.0f;
    for (i += stride(); i < (unsigned)n; i += stride()) out[i] = prev[i] * scale[i] + 1.0f;
}

extern "C" __global__ void consume_raw(const float* prev, const float* scale, float* out, int n) {
    unsigned i = first();
    float p = i < (unsigned)n ? prev[i] : 0.0f;
    pdl_wait();
    if (i < (unsigned)n) out[i] = p * scale[i] + 1.0f;
    for (i += stride(); i < (unsigned)n; i += stride()) out[i] = prev[i] * scale[i] + 1.0f;
}

extern "C" __global__ void consume_war(const float* prev, float* a_in, float* out, int n) {
    unsigned i = first();
    if (i < (unsigned)n) a_in[i] = 0.0f;
    pdl_wait();
    for (; i < (unsigned)n; i += stride()) out[i] = prev[i] + 1.0f;
}

extern "C" __global__ void consume_some(const float* prev, float* out, int n) {
    if (blockIdx.x % 2 == 0) pdl_wait();
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = prev[i] + 1.0f;
}

extern "C" __global__ void consume_never(const float* prev, float* out, int n) {
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = prev[i] + 1.0f;
}

extern "C" __global__ void consume_indirect(const float* const* tables, float* out, int n) {
    unsigned i = first();
    float t = i < (unsigned)n ? tables[0][i] : 0.0f;
    pdl_wait();
    if (i < (unsigned)n) out[i] = t + 1.0f;
}

template <class Pdl>
__device__ __forceinline__ void scale_body(const float* in, float* out, int n) {
    Pdl::trigger();
    Pdl::wait();
    for (unsigned i = first(); i < (unsigned)n; i += stride()) out[i] = 2.0f * in[i];
}
ORDO_PDL_KERNELS(scale, (const float* in, float* out, int n), (in, out, n))
