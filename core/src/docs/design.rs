//! # Stream-correct and zero-cost
//!
//! A thin, zero-cost layer over the CUDA runtime for code that counts microseconds: streams,
//! events, device/pinned/registered/managed memory, stream-ordered allocation and pools (of host
//! memory too), copies one by one and batched, SM partitions ([`partition`]), and errors that
//! keep CUDA's code, the call that failed and the driver's words about it. `no_std` (features
//! `alloc` and `std`, `std` on by default); every handle is a `repr(transparent)` newtype over the
//! raw one.
//!
//! ## Stream-correct
//! Everything that enqueues work takes the caller's stream ([`StreamRef`]) and enqueues on it;
//! nothing here synchronises unless its name says so (`synchronize`, `*_blocking`). Device buffers
//! are allocated with `cudaMallocAsync` and freed with `cudaFreeAsync` on their stream, so dropping
//! one never stalls the device.
//!
//! ## Hot paths
//! Kernel launch, event record, stream wait, queries and stream-ordered allocation are one driver
//! call each: no heap allocation, no lock, nothing the raw call does not need (a launch reads its
//! kernel's driver handle from a lock-free table, see [`launch`]). A GPU test counts heap
//! allocations across them with a counting global allocator.
//!
//! ## Errors
//! See [`error`] for the two waves (launch-configuration errors at the call, execution errors at
//! the next query or synchronise), sticky errors and `CUDA_LAUNCH_BLOCKING=1`.
//!
//! [`partition`]: crate::partition
//! [`StreamRef`]: crate::StreamRef
//! [`launch`]: crate::launch
//! [`error`]: crate::error
