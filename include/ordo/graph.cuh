// ordo/graph.cuh: device code for CUDA graph conditional nodes.
//
// A conditional node (a WHILE loop in ordo: ordo_core::graph::Graph::add_while_node) tests a
// condition value at run time; kernels of the graph set it through the node's handle, which the
// host passes to them as an argument (ordo_core::graph::ConditionalHandle in Rust, the 64-bit
// cudaGraphConditionalHandle here). A WHILE node runs its body again while the value is non-zero.
//
// Use:
//   #include "ordo/graph.cuh"
//   extern "C" __global__ void step(ordo_conditional_handle loop, unsigned int* left) {
//       if (--*left == 0) ordo_set_condition(loop, 0);  // one thread: grid and block of 1
//   }
//
// cudaGraphSetConditional is resolved by the driver when the module loads (as printf is): no
// relocatable device code (-rdc) and no cudadevrt are needed. It needs CUDA 12.3 or later.
#pragma once

#include <cuda_runtime.h>

// The handle of a conditional node, as the host passes it: the value of ordo's ConditionalHandle.
typedef cudaGraphConditionalHandle ordo_conditional_handle;

static_assert(sizeof(ordo_conditional_handle) == 8, "ConditionalHandle is a 64-bit value in ordo");

// Sets the condition value of `handle` for the graph launch this kernel runs in
// (cudaGraphSetConditional). Concurrent calls for one handle race (undefined in CUDA): call it from
// one thread, or make sure every caller writes after the others have finished. The kernel must run
// in the graph that owns the handle.
__device__ __forceinline__ void ordo_set_condition(ordo_conditional_handle handle, unsigned int value) {
    cudaGraphSetConditional(handle, value);
}
