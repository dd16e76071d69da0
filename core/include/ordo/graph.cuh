// ordo/graph.cuh: device code for CUDA graph conditional nodes.
//
// A conditional node (ordo_core::graph::Graph::add_conditional_node, and StreamRef::
// capture_conditional inside a capture) tests a condition value when it runs; kernels of the graph
// set it through the node's handle, which the host passes to them as an argument
// (ordo_core::graph::ConditionalHandle in Rust, the 64-bit cudaGraphConditionalHandle here). What
// the value means depends on the node:
//   IF        body 0 runs once when the value is non-zero;
//   IF/ELSE   body 0 runs when it is non-zero, body 1 when it is zero (CUDA 12.8 and later);
//   WHILE     body 0 runs again and again while it is non-zero (tested before each run);
//   SWITCH    body n runs when the value is n; none runs when it is the number of cases or more
//             (CUDA 12.8 and later).
// One setter serves them all: ordo_set_condition(handle, value), with a case index for SWITCH.
//
// Use:
//   #include "ordo/graph.cuh"
//   extern "C" __global__ void step(ordo_conditional_handle loop, unsigned int* left) {
//       if (--*left == 0) ordo_set_condition(loop, 0);  // one thread: grid and block of 1
//   }
//   extern "C" __global__ void pick(ordo_conditional_handle branch, const unsigned int* which) {
//       ordo_set_condition(branch, *which);  // one thread; a SWITCH runs body *which
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
// (cudaGraphSetConditional): non-zero or zero for IF, IF/ELSE and WHILE, the case index for SWITCH.
// Concurrent calls for one handle race (undefined in CUDA): call it from one thread, or make sure
// every caller writes after the others have finished. The kernel must run in the graph that owns
// the handle or in a graph nested in it (a body of a conditional node, a child graph).
__device__ __forceinline__ void ordo_set_condition(ordo_conditional_handle handle, unsigned int value) {
    cudaGraphSetConditional(handle, value);
}
