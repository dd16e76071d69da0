// ordo.hpp compiles with g++ after the CUDA runtime's C++ header (whose cudaGetKernel has a
// template overload beside the C function), with -std=c++17 -Wall -Wextra -Werror (the CUDA
// headers as system headers): ordo::launch, ordo::pdl_plan and the C calls go through the
// _resolved exports with this file's cudaGetKernel. Never run: the calls type-check the routing.
#include <cuda_runtime.h>
#include "ordo.hpp"

// A host function in a kernel's place (the host stub of `__global__ void k(float*, int)`).
extern "C" void ordo_header_cpp17_cudart_kernel(float*, int) {}

extern "C" int ordo_header_cpp17_cudart_check(cudaStream_t stream, float* x) {
    ordo_launch_config config = ordo::launch_config(1, 32);
    ordo::launch(stream, ordo_header_cpp17_cudart_kernel, config, x, 1);
    ordo_pdl_plan plan = ordo::pdl_plan(ordo_header_cpp17_cudart_kernel, ordo_header_cpp17_cudart_kernel, 0, 1024, 256);
    void* args[] = {&x};
    const void* k = reinterpret_cast<const void*>(&ordo_header_cpp17_cudart_kernel);
    ordo_kernel_resolver_fn resolver = ordo_kernel_resolver_here;
    return ordo_launch_kernel(stream, k, args, &config) + static_cast<int>(plan.grid) + (resolver != nullptr);
}
