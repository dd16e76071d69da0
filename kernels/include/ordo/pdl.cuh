// ordo/pdl.cuh: Programmatic Dependent Launch helpers for device code.
//
// On sm_90 and later they compile to griddepcontrol instructions; below sm_90 (where ptxas rejects
// them) to nothing, so one source serves every target. Launch the kernel with ordo's PDL attribute
// (programmatic stream serialization) for them to matter; without it they are no-ops.
//
//   ordo_pdl_wait():    blocks until the previous kernel in the stream has completed and its memory
//                       writes are visible. Everything the kernel reads from the previous kernel must
//                       be read after this call; work before it overlaps the previous kernel's tail.
//   ordo_pdl_trigger(): lets the next kernel start launching (its blocks begin their prologue). It
//                       orders no memory. Call it once this block no longer needs the SM resources
//                       the next kernel would take: for a grid of more than one wave, at the end of the
//                       block's work, or the waiting dependent blocks steal slots from the remaining waves.
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
