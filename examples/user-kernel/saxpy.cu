// A user's kernel: y = a * x + y, written once as a grid-stride body and compiled in two forms by
// ordo's ORDO_PDL_KERNELS: `saxpy` (plain: no griddepcontrol instruction) and `saxpy_pdl` (waits
// for the previous kernel and lets the next one launch early). Both are extern "C", so Rust can
// name their host stubs.
#include "ordo/pdl.cuh"

template <class Pdl>
__device__ __forceinline__ void saxpy_body(float a, const float* x, float* y, int n) {
    Pdl::trigger();  // the next kernel may begin launching
    Pdl::wait();     // y was written by the previous kernel: read it only after the wait
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        y[i] = fmaf(a, x[i], y[i]);
}
ORDO_PDL_KERNELS(saxpy, (float a, const float* x, float* y, int n), (a, x, y, n))
