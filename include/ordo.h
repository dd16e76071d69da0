/* ordo.h: the C ABI of ordo, for C and C++ programs that own their CUDA streams.
 *
 * Link libordo.a (cargo build --release -p ordo: target/release/libordo.a) together with the CUDA
 * runtime (nvcc links the static one by default; otherwise -lcudart_static) and -lrt -lpthread -ldl
 * -lstdc++ -lm. ffi-tests/cmake-example shows a CMake project doing so. C99 and C++ both. The
 * header is written by hand; a test (ffi-tests/tests/abi.rs) checks it against the Rust exports.
 *
 * STREAMS. Every function that enqueues work takes the caller's stream and is stream-correct: it
 * enqueues on that stream only, never synchronises, allocates temporaries with cudaMallocAsync on
 * it and joins internal forks back to it with events on every path out, errors included: once the
 * stream has passed the point of a call, nothing the call enqueued is still running. A NULL stream
 * is refused with ORDO_ERROR_INVALID_ARGUMENT: pass cudaStreamLegacy or cudaStreamPerThread to mean
 * a default stream. Streams are `struct CUstream_st *`, which is what cudaStream_t is.
 *
 * STATUS CODES. 0 is success; CUDA's codes (1 to 999) pass through unchanged; ordo's own are 10001
 * to 10008 below. Every function returns one of these and nothing else. No Rust panic crosses into
 * C (ORDO_ERROR_PANIC instead). NULL or misaligned pointers, zero sizes and sizes whose byte count
 * overflows give ORDO_ERROR_INVALID_ARGUMENT before anything is enqueued.
 *
 * HANDLES (ordo_graph_cache, ordo_staging_ring, ordo_timer) are opaque tokens that ordo never
 * dereferences: it looks each one up in a table of live handles. A handle that is not a live
 * handle of the expected kind (NULL, already destroyed, never made by ordo, or a handle of another
 * kind) gives ORDO_ERROR_INVALID_HANDLE and nothing is done; a stale handle never reaches a newer
 * object. The destroy functions accept any value: NULL, destroyed, unknown and wrong-kind handles
 * are ignored, so destroying twice is harmless.
 *
 * THREADS. Every function may be called from any thread, and every handle may be used from several
 * threads at once. Calls on one graph cache are serialised internally (a second thread's call
 * waits for the first; its body callback never runs twice at once); a staging ring and a timer
 * need no serialising (their state is atomic, or CUDA's events). Destroying a handle while another
 * thread's call on it is running is safe: that call completes, the object is freed when it
 * returns, and later calls get ORDO_ERROR_INVALID_HANDLE. Calls that may block the calling
 * thread: ordo_staging_ring_acquire with wait 1 (until a slot's copy has finished), a graph cache
 * call while another thread's call on the same cache runs, and creating or destroying a staging
 * ring (cudaHostAlloc, cudaFreeHost, which CUDA may make wait for the device). No other call waits
 * for the device or for another thread.
 *
 * CALLBACKS (ordo_compute_fn, ordo_capture_fn) run on the thread that made the ordo call, before
 * that call returns, with the stream they are given capturing or not as described at each.
 * - They must not throw a C++ exception or otherwise unwind out of the callback: unwinding through
 *   ordo's frames is undefined behaviour. Catch everything inside and return a status.
 * - A non-zero status ends the ordo call, which returns that status unchanged when it is a CUDA
 *   code or one of ordo's, else ORDO_ERROR_LIBRARY.
 * - They may call back into ordo on their thread, and that never deadlocks: every call works as
 *   usual, except that a graph cache's body calling into the same cache gets
 *   ORDO_ERROR_HANDLE_BUSY. (Two threads whose cache bodies each call the other's cache wait for each
 *   other, as any two locks taken in opposite orders do.)
 * - They run in the capture mode the calling thread had when it called ordo.
 * - `user` is passed as given. For ordo_pipeline_run it must stay valid for the call; for a graph
 *   cache until the cache is destroyed, and usable from every thread that calls the cache.
 *
 * CAPTURES. Every function may be called while the stream it is given is being captured
 * (cudaStreamBeginCapture, in global, thread-local or relaxed mode), and while other threads
 * capture: the work is captured into the caller's graph and the capture stays valid, or the call is
 * refused with a documented status without touching the capture (ORDO_ERROR_STREAM_CAPTURING where
 * that is said below). ordo makes its own calls that CUDA restricts during captures (a ring's
 * pinned allocation, a cache's graph instantiation, destruction) with the calling thread's capture
 * mode exchanged to relaxed (cudaThreadExchangeStreamCaptureMode), restored before it returns, so
 * they neither fail nor invalidate any capture. While the stream captures, CUDA forbids any query of
 * it (its device included: the query would invalidate the capture), so ordo takes the calling
 * thread's current device as the stream's device: keep the stream's device current while capturing.
 * Work captured into a graph runs at every launch of it: the memory it uses must be valid then.
 * CUDA refuses work on cudaStreamLegacy while any blocking stream captures (cudaStreamPerThread is
 * one: a graph cache run on it captures it), with cudaErrorStreamCaptureImplicit.
 *
 * DEVICE POINTERS passed with a stream must be device memory of the stream's device, or managed
 * memory: the work runs on the stream's device whatever the current device is, and memory of
 * another device gives ORDO_ERROR_INVALID_ARGUMENT (cudaPointerGetAttributes tells) rather than a
 * fault on the device. ordo cannot see an allocation's size: sizes are the caller's promise.
 *
 * AFTER cudaDeviceReset every stream, event, graph and allocation made before is gone, and CUDA
 * itself may crash on a handle of the destroyed context (measured with CUDA 13.0: destroying or
 * launching an old executable graph segfaults). ordo remembers the context each handle's CUDA
 * objects were made in (a timer's and a ring's: the device current at create; a graph cache's: the
 * stream's device at its first capture) and never touches them once that context is gone: calls on
 * such a handle return cudaErrorContextIsDestroyed (709), and destroying it is safe (its CUDA
 * objects are forgotten, CUDA having freed them). Make new handles after the reset. ordo's
 * internal pipelines are replaced the same way, so ordo_pipeline_run works again at once. Streams
 * and memory the caller made before the reset are the caller's to forget.
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
/* A NULL or misaligned pointer, a zero or mismatched size, a size whose byte count overflows, a
 * value out of range. */
#define ORDO_ERROR_INVALID_ARGUMENT 10001
/* Pageable host memory where pinned or registered memory is required. */
#define ORDO_ERROR_PAGEABLE_MEMORY 10002
/* Not supported by the CUDA version ordo was built against, or by the device. */
#define ORDO_ERROR_NOT_SUPPORTED 10003
/* A Rust panic was caught at the boundary. */
#define ORDO_ERROR_PANIC 10004
/* A CUDA library (cuBLAS, NCCL) failed, or a callback returned a status outside these ranges. */
#define ORDO_ERROR_LIBRARY 10005
/* Not a live handle of the expected kind: NULL, destroyed, never made by ordo, or of another kind. */
#define ORDO_ERROR_INVALID_HANDLE 10006
/* Refused because the stream is capturing, before anything was enqueued: the capture is untouched. */
#define ORDO_ERROR_STREAM_CAPTURING 10007
/* A callback called back into the handle whose call is running it (on the same thread). */
#define ORDO_ERROR_HANDLE_BUSY 10008

/* Version and build information. ordo_version is the ordo crate's version, e.g. "0.1.0". */
const char* ordo_version(void);
int ordo_cuda_version(void);
ordo_status ordo_runtime_version(int* out);

/* Status names and descriptions (static strings); 1 if the status is a sticky CUDA error. */
const char* ordo_status_name(ordo_status status);
const char* ordo_status_string(ordo_status status);
int ordo_status_is_sticky(ordo_status status);

/* y = normalize(A x); a is row-major rows x cols; all device memory. Kernels only: capturable. */
ordo_status ordo_gemv_normalize(struct CUstream_st* stream, const float* a, const float* x, float* y, size_t rows, size_t cols);

/* Grayscale + 5x5 Gaussian blur of an interleaved-RGB frame (device memory). Capturable. */
ordo_status ordo_frame_filter(struct CUstream_st* stream, const uint8_t* rgb, uint8_t* out, size_t width, size_t height);

/* `steps` dependent kernels out = prev * scale + 1, ping-ponging a -> b -> a ...;
 * pdl: 0 off, 1 ordo's rule (Programmatic Dependent Launch, trigger placed by grid size). Capturable. */
ordo_status ordo_pdl_chain(struct CUstream_st* stream, float* a, float* b, const float* scale, size_t n, size_t steps, int pdl);

/* The chunked copy/compute pipeline over n floats: host_in -> dev_in, compute dev_in -> dev_out,
 * dev_out -> host_out, in `chunks` chunks (1 to n, at most 65536) over internal streams forked from
 * `stream` and joined back to it on every path out. host_in and host_out must be pinned or
 * registered (ORDO_ERROR_PAGEABLE_MEMORY otherwise); dev_in and dev_out device memory of the
 * stream's device. One pool of internal pipelines a device; concurrent runs each get their own.
 * compute runs once a chunk, on the calling thread, with the internal stream it must enqueue on and
 * the chunk's pointers (NULL: ordo's 64-step kernel); while `stream` captures, that stream is part
 * of the capture. If compute (or a copy) fails on a chunk, no later chunk is enqueued, the status is
 * returned, and the work already enqueued is joined back to `stream`: after the caller synchronises
 * `stream`, ordo writes nothing more. Capturable in every mode; the graph replays the whole run. */
typedef ordo_status (*ordo_compute_fn)(struct CUstream_st* stream, const float* input, float* output, size_t n, void* user);
ordo_status ordo_pipeline_run(struct CUstream_st* stream, const float* host_in, float* dev_in, float* dev_out, float* host_out, size_t n, size_t chunks, ordo_compute_fn compute, void* user);

/* Graphs cached per batch-size bucket. body enqueues the work for `bucket` elements on the stream
 * it is given (capturing, in global mode), over buffers the caller holds; the memory it uses must
 * stay valid until the cache is destroyed. n_buckets 0: the buckets 1, 2, 4, ... 256 (buckets is
 * ignored); otherwise buckets points to n_buckets strictly increasing, non-zero values (NULL or
 * misaligned: ORDO_ERROR_INVALID_ARGUMENT). overflow_eager: run sizes over the largest bucket
 * eagerly instead of failing with ORDO_ERROR_INVALID_ARGUMENT.
 * run: replays the graph of the bucket n rounds up to (capturing it first on `stream` if needed);
 * the bucket used (or n, run eagerly) goes to bucket_out (may be NULL). While `stream` captures,
 * run calls body for the bucket straight into that capture (a graph launch would invalidate it).
 * capture_all: captures every bucket now; ORDO_ERROR_STREAM_CAPTURING while `stream` captures. */
typedef struct OrdoGraphCache ordo_graph_cache;
typedef ordo_status (*ordo_capture_fn)(struct CUstream_st* stream, size_t bucket, void* user);
ordo_status ordo_graph_cache_create(const size_t* buckets, size_t n_buckets, int overflow_eager, ordo_capture_fn body, void* user, ordo_graph_cache** out);
ordo_status ordo_graph_cache_capture_all(ordo_graph_cache* cache, struct CUstream_st* stream);
ordo_status ordo_graph_cache_run(ordo_graph_cache* cache, struct CUstream_st* stream, size_t n, size_t* bucket_out);
void ordo_graph_cache_destroy(ordo_graph_cache* cache);

/* A ring of pinned staging slots: acquire a slot (its memory and a ticket), fill it, submit its
 * copy; the slot is free again once the copy has finished.
 * acquire: wait 0: cudaErrorNotReady when no slot is free; wait 1: waits on the host for a slot
 * whose copy is in flight (cudaErrorNotReady at once when every slot is held by a ticket not yet
 * submitted or by a graph, since nothing could come free by waiting; CUDA's error when the context
 * is lost).
 * submit: 1 <= bytes <= slot_bytes, device_dst device memory; the ticket is used up by the call
 * once its arguments passed their checks, also if it then fails. Capturable: the captured copy runs
 * at every launch of the graph, and the slot stays held until the graph and every executable graph
 * made from it are destroyed.
 * destroy: tickets not submitted are released; copies in flight and graphs keep the pinned memory
 * until they are done with it. */
typedef struct OrdoStagingRing ordo_staging_ring;
ordo_status ordo_staging_ring_create(size_t slots, size_t slot_bytes, ordo_staging_ring** out);
ordo_status ordo_staging_ring_acquire(ordo_staging_ring* ring, int wait, void** slot_out, size_t* ticket_out);
ordo_status ordo_staging_ring_submit(ordo_staging_ring* ring, size_t ticket, size_t bytes, void* device_dst, struct CUstream_st* stream);
void ordo_staging_ring_destroy(ordo_staging_ring* ring);

/* Event-based timing (events of the device current at create): start and stop on a stream (of
 * that device), elapsed milliseconds once stop has completed (cudaErrorNotReady before; it never
 * waits; ORDO_ERROR_INVALID_ARGUMENT if either was never recorded). start and stop may be
 * captured; CUDA cannot time events recorded by a graph (elapsed then returns CUDA's error). */
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
