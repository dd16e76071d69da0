/* ordo.h: the C ABI of ordo, for C and C++ programs that own their CUDA streams.
 *
 * Link libordo.a (cargo build --release -p ordo: target/release/libordo.a) together with the CUDA
 * runtime (nvcc links the static one by default; otherwise -lcudart_static) and -lrt -lpthread -ldl
 * -lstdc++ -lm. ffi-tests/cmake-example shows a CMake project doing so.
 *
 * Every function that enqueues work takes the caller's stream and is stream-correct: it enqueues on
 * that stream only, never synchronises, allocates temporaries with cudaMallocAsync on it and joins
 * internal forks back with events, so it can be captured into the caller's CUDA graph. A NULL stream
 * is refused with ORDO_ERROR_INVALID_ARGUMENT: pass cudaStreamLegacy or cudaStreamPerThread to mean
 * a default stream.
 *
 * Status codes: 0 is success; CUDA's codes (1 to 999) pass through unchanged; ordo's own start at
 * 10001. No panic crosses into C; NULL pointers, zero sizes and handles of the wrong kind give a
 * status. Streams are `struct CUstream_st *`, which is what cudaStream_t is.
 *
 * C99 and C++ both. Checked against the Rust exports by a test (ffi-tests).
 */
#ifndef ORDO_H
#define ORDO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

typedef int ordo_status;

#define ORDO_SUCCESS 0
#define ORDO_ERROR_INVALID_ARGUMENT 10001
#define ORDO_ERROR_PAGEABLE_MEMORY 10002
#define ORDO_ERROR_NOT_SUPPORTED 10003
#define ORDO_ERROR_PANIC 10004
#define ORDO_ERROR_LIBRARY 10005

/* Version and build information. */
const char* ordo_version(void);
int ordo_cuda_version(void);
ordo_status ordo_runtime_version(int* out);

/* Status names and descriptions (static strings); 1 if the status is a sticky CUDA error. */
const char* ordo_status_name(ordo_status status);
const char* ordo_status_string(ordo_status status);
int ordo_status_is_sticky(ordo_status status);

/* Device pointers passed with a stream must be device memory of the stream's device, or managed
 * memory: the work runs on the stream's device whatever the current device is, and memory of
 * another device gives ORDO_ERROR_INVALID_ARGUMENT (cudaPointerGetAttributes tells) rather than a
 * fault on the device. While the stream is capturing CUDA refuses that query, so it is skipped. */

/* y = normalize(A x); a is row-major rows x cols; all device memory. */
ordo_status ordo_gemv_normalize(struct CUstream_st* stream, const float* a, const float* x, float* y, size_t rows, size_t cols);

/* Grayscale + 5x5 Gaussian blur of an interleaved-RGB frame (device memory). */
ordo_status ordo_frame_filter(struct CUstream_st* stream, const uint8_t* rgb, uint8_t* out, size_t width, size_t height);

/* `steps` dependent kernels out = prev * scale + 1, ping-ponging a -> b -> a ...;
 * pdl: 0 off, 1 ordo's rule (Programmatic Dependent Launch, trigger placed by grid size). */
ordo_status ordo_pdl_chain(struct CUstream_st* stream, float* a, float* b, const float* scale, size_t n, size_t steps, int pdl);

/* The chunked copy/compute pipeline. host_in and host_out must be pinned or registered
 * (ORDO_ERROR_PAGEABLE_MEMORY otherwise); dev_in and dev_out device memory; n floats each.
 * One pipeline a device (the stream's), shared by callers.
 * compute runs on each chunk on the stream it is given (NULL: ordo's 64-step kernel). */
typedef ordo_status (*ordo_compute_fn)(struct CUstream_st* stream, const float* input, float* output, size_t n, void* user);
ordo_status ordo_pipeline_run(struct CUstream_st* stream, const float* host_in, float* dev_in, float* dev_out, float* host_out, size_t n, size_t chunks, ordo_compute_fn compute, void* user);

/* Graphs cached per batch-size bucket. body enqueues the work for `bucket` elements on the
 * (capturing) stream it is given, over buffers the caller holds. buckets NULL or n_buckets 0:
 * 1, 2, 4, ... 256. overflow_eager: run sizes over the largest bucket eagerly instead of failing. */
typedef struct OrdoGraphCache ordo_graph_cache;
typedef ordo_status (*ordo_capture_fn)(struct CUstream_st* stream, size_t bucket, void* user);
ordo_status ordo_graph_cache_create(const size_t* buckets, size_t n_buckets, int overflow_eager, ordo_capture_fn body, void* user, ordo_graph_cache** out);
ordo_status ordo_graph_cache_capture_all(ordo_graph_cache* cache, struct CUstream_st* stream);
ordo_status ordo_graph_cache_run(ordo_graph_cache* cache, struct CUstream_st* stream, size_t n, size_t* bucket_out);
void ordo_graph_cache_destroy(ordo_graph_cache* cache);

/* A ring of pinned staging slots: acquire a slot, fill it, submit its copy; the slot is free again
 * once the copy has finished. wait 0: cudaErrorNotReady when none is free. */
typedef struct OrdoStagingRing ordo_staging_ring;
ordo_status ordo_staging_ring_create(size_t slots, size_t slot_bytes, ordo_staging_ring** out);
ordo_status ordo_staging_ring_acquire(ordo_staging_ring* ring, int wait, void** slot_out, size_t* ticket_out);
ordo_status ordo_staging_ring_submit(ordo_staging_ring* ring, size_t ticket, size_t bytes, void* device_dst, struct CUstream_st* stream);
void ordo_staging_ring_destroy(ordo_staging_ring* ring);

/* Event-based timing: start and stop on a stream, elapsed milliseconds once stop has completed
 * (cudaErrorNotReady before; it never waits). */
typedef struct OrdoTimer ordo_timer;
ordo_status ordo_timer_create(ordo_timer** out);
ordo_status ordo_timer_start(ordo_timer* timer, struct CUstream_st* stream);
ordo_status ordo_timer_stop(ordo_timer* timer, struct CUstream_st* stream);
ordo_status ordo_timer_elapsed_ms(ordo_timer* timer, float* ms);
void ordo_timer_destroy(ordo_timer* timer);

#ifdef __cplusplus
}
#endif

#endif /* ORDO_H */
