// A chain step, out[i] = prev[i] * scale[i] + 1 over n floats, written as plain CUDA C (no ordo
// header), for ordo-measure's guide and its check against ordo-bench. It compiles with nvcc and
// with NVRTC.
//
// The body is ordo-bench's chain step (benches/cuda/baseline.cu, bl_chain_step_stamped): a
// grid-stride loop; in the PDL form the block triggers the next kernel at its start, loads its
// `scale` element, then waits for the previous kernel (griddepcontrol.wait) before it reads `prev`.
// It comes in four kernels:
//   chain_step              no griddepcontrol at all (what a user writes without PDL)
//   chain_step_pdl          the PDL form (trigger, wait)
//   chain_step_stamped      chain_step writing %globaltimer stamps to `st`
//   chain_step_stamped_pdl  chain_step_pdl writing them
// The stamped kernels follow ordo-measure's `stamps` argument: each block writes, at
// st[3 * blockIdx.x + 0 / 1 / 2], its entry, its release from the wait (its entry again when it has
// none) and its end after its stores; each launch gets its own `st`.
//
// nvcc -cubin -arch=sm_90 -o chain_step.cubin chain_step.cu     (or -ptx, or --fatbin)

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <bool Pdl, bool Stamps>
__device__ __forceinline__ void chain_step_body(const float* prev, float* out, const float* scale, int n,
                                                unsigned long long* st) {
    unsigned long long t0 = Stamps ? globaltimer() : 0;
    const unsigned count = (unsigned)n;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (Pdl) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    float s = i < count ? scale[i] : 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (Pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    unsigned long long t1 = Stamps ? globaltimer() : 0;
    if (i < count) out[i] = fmaf(prev[i], s, 1.0f);
    for (i += stride; i < count; i += stride) out[i] = fmaf(prev[i], scale[i], 1.0f);
    if (Stamps) {
        __syncthreads();
        if (threadIdx.x == 0) {
            st[3 * blockIdx.x] = t0;
            st[3 * blockIdx.x + 1] = t1;
            st[3 * blockIdx.x + 2] = globaltimer();
        }
    }
}

extern "C" __global__ void chain_step(const float* prev, float* out, const float* scale, int n) {
    chain_step_body<false, false>(prev, out, scale, n, nullptr);
}

extern "C" __global__ void chain_step_pdl(const float* prev, float* out, const float* scale, int n) {
    chain_step_body<true, false>(prev, out, scale, n, nullptr);
}

extern "C" __global__ void chain_step_stamped(const float* prev, float* out, const float* scale, int n,
                                              unsigned long long* st) {
    chain_step_body<false, true>(prev, out, scale, n, st);
}

extern "C" __global__ void chain_step_stamped_pdl(const float* prev, float* out, const float* scale, int n,
                                                  unsigned long long* st) {
    chain_step_body<true, true>(prev, out, scale, n, st);
}
