/* ordo.h: the C ABI of ordo, for C and C++ programs that own their CUDA streams.
 *
 * Link libordo.a (cargo build --release -p ordo: target/release/libordo.a) together with the CUDA
 * runtime (nvcc links the static one by default; otherwise -lcudart_static) and -lrt -lpthread -ldl
 * -lstdc++ -lm. ffi-tests/cmake-example shows a CMake project doing so. C99 and C++ both. The
 * header is written by hand; a test (ffi-tests/tests/abi.rs) checks it against the Rust exports.
 *
 * LINKING AND YOUR OWN KERNELS. scripts/package.sh's archive has libordo.a (static: the program
 * links one CUDA runtime, the static one as nvcc does by default) and libordo.so (shared: it loads
 * the shared CUDA runtime, libcudart.so.MAJOR); CMake ordo::ordo and ordo::ordo_shared, pkg-config
 * ordo-static and ordo. A program linked by nvcc gets its own static CUDA runtime by default: with
 * libordo.so the process holds two copies of the runtime, and the program's kernels are registered
 * with its own copy only, which ordo's cannot see (so are a shared library's, built with the static
 * runtime; CMake's ordo::ordo_shared links libcudart.so ahead of CMake's default static runtime, so
 * a CMake program's own calls go to the shared one). The rule: include the CUDA runtime's header
 * (cuda_runtime.h or cuda_runtime_api.h) before ordo.h in every file that passes a kernel to
 * ordo_launch_kernel or ordo_pdl_plan_launch (ordo::launch, ordo::pdl_plan); every .cu file does,
 * since nvcc includes cuda_runtime.h first. ordo.h then routes those two calls to
 * ordo_launch_kernel_resolved and ordo_pdl_plan_launch_resolved with that file's cudaGetKernel,
 * which ordo asks once a kernel, and the program works in every link: libordo.a, libordo.so with
 * the static runtime, libordo.so with the shared one (-cudart shared). A file that calls them then
 * references cudaGetKernel, cudaPeekAtLastError and cudaGetLastError: link a CUDA runtime (every
 * link above does). Without the header (a .c or .cpp file that takes a kernel's address from
 * elsewhere), a kernel ordo has not seen before fails with cudaErrorInvalidResourceHandle (400) in
 * a process of two runtimes; the kernel's cudaKernel_t (cudaGetKernel in the file that defines it)
 * works everywhere.
 *
 * BUILD FEATURES. The library is built with two features, both on by default: `kernels` (ordo's
 * own CUDA kernels, compiled by nvcc: ordo_gemv_normalize, ordo_frame_filter, ordo_pdl_chain, and
 * the pipelines' built-in compute, a NULL compute callback) and `nccl` (the ordo_nccl_* functions;
 * NCCL itself is loaded at run time). A program that needs neither builds ordo without nvcc
 * (cargo build -p ordo-cuda-capi --no-default-features). Every function below exists in every
 * build; one whose feature is off returns ORDO_ERROR_NOT_SUPPORTED, and the last error names the
 * feature.
 *
 * STREAMS. Every function that enqueues work takes the caller's stream and is stream-correct: it
 * enqueues on that stream only, never synchronises (but on the two error paths THREADS lists),
 * allocates temporaries on it (ALLOCATION) and joins internal forks back to it with events
 * on every path out, errors included: once the stream has passed the point of a call, nothing the
 * call enqueued is still running. A NULL stream is refused with ORDO_ERROR_INVALID_ARGUMENT: pass
 * cudaStreamLegacy or cudaStreamPerThread to mean a default stream. Streams are
 * `struct CUstream_st *`, which is what cudaStream_t is.
 *
 * ALLOCATION. ordo's temporaries are stream-ordered: allocated on the caller's stream before the
 * work that uses them (cudaMallocFromPoolAsync) and freed on it after (cudaFreeAsync), so they
 * return to their pool in stream order and never synchronise; while the stream captures, they are
 * allocation and free nodes of the caller's graph. They come from a pool the caller names in an
 * options struct: ordo_pipeline_options.pool (the pipeline's device buffers, when a run is given
 * NULL for them) and ordo_alloc_options.pool (the _with forms of ordo_gemv_normalize and
 * ordo_frame_filter); or else from ordo's own pool of the device (ordo_temporary_pool), which
 * keeps their memory mapped across synchronisations, up to an eighth of the device's memory. The
 * device's pools (default and current) are not used or changed: their release threshold is 0 by
 * default, so each synchronise unmaps their memory and the next allocation maps it again (a hundred
 * microseconds for 4 bytes allocated, freed and synchronised: CB-12). The exports that allocate a
 * temporary: ordo_pipeline_run_on and ordo_pipeline_run_stencil (NULL device buffers),
 * ordo_gemv_normalize (4 bytes, a sum of
 * squares, only for more than 1024 rows: up to 1024 it normalises in one block, no temporary),
 * ordo_frame_filter (4 bytes a pixel). No other export allocates device memory itself
 * (ordo_pipeline_run takes the caller's buffers; a staging ring's slots are pinned host memory).
 *
 * STATUS CODES. 0 is success; CUDA's codes (positive) pass through unchanged, ORDO_NOT_READY
 * (cudaErrorNotReady, "not yet") among them; ordo's own are -1 to -9 below. Every function returns
 * one of these and nothing else; ordo_last_error gives the detail of a failure. No Rust panic
 * crosses into C (ORDO_ERROR_PANIC instead). NULL or misaligned pointers, zero sizes and sizes whose byte count
 * overflows give ORDO_ERROR_INVALID_ARGUMENT before anything is enqueued (one exception, said at
 * ordo_graph_cache_run: its n 0 rounds up to the first bucket, as in the Rust API).
 *
 * HANDLES (ordo_graph_cache, ordo_staging_ring, ordo_timer, ordo_pipeline, ordo_sm_partition,
 * ordo_sm_stream) are opaque tokens that ordo never
 * dereferences: it looks each one up in a table of live handles. A handle that is not a live
 * handle of the expected kind (NULL, already destroyed, never made by ordo, or a handle of another
 * kind) gives ORDO_ERROR_INVALID_HANDLE and nothing is done; a stale handle never reaches a newer
 * object. The destroy functions accept any value: NULL, destroyed, unknown and wrong-kind handles
 * are ignored, so destroying twice is harmless.
 *
 * THREADS. Every function may be called from any thread, and every handle may be used from several
 * threads at once. No lock of ordo's is held while a callback runs, with one exception: a graph
 * cache's body captured in ORDO_CAPTURE_GLOBAL mode runs under ordo's process-wide global-capture
 * lock (see CAPTURES), so such a body must not wait for another thread that uses a graph cache. A
 * graph cache locks its table of graphs only to look a bucket up, install a graph or launch one,
 * so its body may run on several threads at once (see ordo_graph_cache_create); a staging ring and
 * a timer need no serialising (atomics and short locks, or CUDA's events). Destroying a handle
 * while another thread's call on it is running is safe: that call completes (a graph cache's call
 * stops sooner: see ordo_graph_cache_destroy), the object is freed when it returns, and later
 * calls get ORDO_ERROR_INVALID_HANDLE; an ordo_staging_ring_acquire waiting on a ring that another
 * thread destroys returns ORDO_ERROR_INVALID_HANDLE at once. During a thread's
 * exit cleanup (a C++ thread_local destructor or a pthread key destructor that runs after ordo's
 * per-thread state is gone), ordo_graph_cache_run and ordo_graph_cache_capture_all return
 * ORDO_ERROR_NOT_SUPPORTED (they cannot guard their callback's re-entry there) and no call records
 * a last error.
 * Calls that may block the calling thread, all of them:
 * - ordo_staging_ring_acquire with wait 1: on the host, until a slot's copy has finished;
 * - ordo_staging_ring_create and ordo_staging_ring_destroy: cudaHostAlloc and cudaFreeHost, which
 *   CUDA may make wait for the device. Creating a ring (or destroying the last handle of one) also
 *   frees, with cudaFreeHost, the pinned memory of rings whose last user let go on a CUDA thread
 *   (the last copy in flight, or the last graph holding a slot), where CUDA forbids the free, and
 *   destroys the green contexts of SM partitions whose last holder was a graph (see SM
 *   partitions), each once its partition's queued work has completed;
 * - on error paths only: ordo_staging_ring_submit whose copy was enqueued but whose slot-release
 *   host function (or its ordering) could not be, synchronises `stream` before it returns (the slot
 *   must not be reused under the copy); ordo_pipeline_run, ordo_pipeline_run_on and
 *   ordo_pipeline_run_stencil whose join of a
 *   worker stream fails (the event record or the wait) synchronise that worker stream, on the
 *   calling thread;
 * - a graph cache call, while another thread launches one of the same cache's graphs (the launch
 *   itself, cudaGraphLaunch, which uploads the graph at a bucket's first replay; never a body), and
 *   any call, briefly, on ordo's internal tables (live
 *   handles, the pipelines' pools), which are never held across a callback or a wait for the device;
 * - ordo_sm_partition_destroy and ordo_sm_stream_destroy, when they drop the last holder of a
 *   partition (its last handle, with no graph ordo captured on it left): until the partition's
 *   queued work has completed (then its green context goes); ordo_sm_partitions_create, when it
 *   destroys the green context of a partition whose last holder was a graph (see SM partitions),
 *   likewise;
 * - a graph cache call that captures in ORDO_CAPTURE_GLOBAL mode, while another thread's graph
 *   cache captures in that mode; and a graph cache's instantiation or destruction of its graphs,
 *   or its first replay of a bucket (which uploads the graph, unless
 *   ordo_graph_cache_options.upload had it uploaded at capture), in any mode, while another
 *   thread's graph cache captures in ORDO_CAPTURE_GLOBAL mode (see CAPTURES);
 * - NCCL: ordo_nccl_comm_init_rank (until every rank has joined), ordo_nccl_comm_destroy (until
 *   the collectives queued on every rank have completed), ordo_nccl_comm_wait (at most its
 *   timeout); none of them holds a lock that another NCCL call of ordo's waits for.
 * No other call waits for the device or for another thread.
 * No ordo function may be called from a CUDA host function (cudaLaunchHostFunc) or from a CUDA
 * user object's destructor: CUDA forbids CUDA calls there, and ordo's functions make them.
 *
 * CALLBACKS (ordo_compute_fn, ordo_pipeline_fn, ordo_stencil_fn, ordo_capture_fn) run on the thread that made the ordo call, before
 * that call returns, with the stream they are given capturing or not as described at each.
 * - They must not throw a C++ exception or otherwise unwind out of the callback: unwinding through
 *   ordo's frames is undefined behaviour. Catch everything inside and return a status.
 * - A non-zero status ends the ordo call, which returns that status unchanged when it is positive
 *   (CUDA's code space, as STATUS CODES says: any cudaError_t, known to this toolkit or not) or one
 *   of ordo's failures, else ORDO_ERROR_LIBRARY (ORDO_NOT_READY among them: it is no failure, but
 *   the call stopped there). The last error records it with its stickiness.
 * - They may call back into ordo on their thread, and that never deadlocks: every call works as
 *   usual, except that a graph cache's body calling into the same cache (on its thread) gets
 *   ORDO_ERROR_HANDLE_BUSY, where the call would recurse without end. No callback runs under a lock
 *   of ordo's (but a body captured in ORDO_CAPTURE_GLOBAL mode, see THREADS), so bodies on two
 *   threads that each call the other's cache, or wait for each other, cannot deadlock inside ordo.
 * - They run in the capture mode the calling thread had when it called ordo.
 * - `user` is passed as given. For ordo_pipeline_run, ordo_pipeline_run_on and ordo_pipeline_run_stencil it must stay
 *   valid for the call; for a graph cache until its user_free is called (ordo_graph_cache_options:
 *   once the cache is destroyed and the last call of it still running has returned), and usable
 *   from every thread that calls the cache. A cache made without user_free has no such moment:
 *   `user` must then stay valid until ordo_graph_cache_destroy has returned and every call of the
 *   cache that was running on another thread meanwhile has returned too.
 *
 * CAPTURES. Every function may be called while the stream it is given is being captured
 * (cudaStreamBeginCapture, in global, thread-local or relaxed mode), and while other threads
 * capture in thread-local or relaxed mode: the work is captured into the caller's graph and the
 * capture stays valid, or the call is refused with a documented status without touching the
 * capture (ORDO_ERROR_STREAM_CAPTURING where that is said below).
 * GLOBAL MODE IS A CUDA HAZARD (ordo's docs/cuda-behaviours.md, CB-01 and CB-02, seen in plain C++
 * without ordo too): while one thread captures in cudaStreamCaptureModeGlobal, another thread's global-mode capture, or another thread's
 * capture-unsafe call (a synchronise or a stream or event query, a graph instantiation, cudaMalloc/cudaFree,
 * cudaHostAlloc/cudaFreeHost, a blocking copy), kills the process inside the driver (SIGSEGV)
 * instead of failing as CUDA documents; thread-local and relaxed captures run clean. So ordo never
 * captures in global mode unless asked (a graph cache's default is ORDO_CAPTURE_THREAD_LOCAL), and
 * a program that captures in global mode (its own captures, or a graph cache made with
 * ORDO_CAPTURE_GLOBAL) owes that, while that capture is open, no other thread of the process makes
 * a capture-unsafe call: ordo's calls that make them included (creating or destroying a handle, a
 * staging ring's create, a graph cache's capture_all and first run of a bucket, which instantiate,
 * and its first replay of each bucket, which uploads the graph unless
 * ordo_graph_cache_options.upload asked for the upload at capture, the NCCL communicator calls) and
 * the program's own. ordo keeps its own global-mode captures (graph caches in ORDO_CAPTURE_GLOBAL
 * mode) from overlapping each other, and its graph caches' instantiations, first replays and
 * destructions out of them, with a process-wide lock: a program whose only global-mode
 * captures are ordo graph caches' owes the rule for its other threads' calls alone. One exception: a launch of the caller's own kernel (ordo_launch_kernel)
 * that passes ordo's checks but that CUDA refuses (more dynamic shared memory than the kernel was
 * allowed, say) fails inside a capture as the same cudaLaunchKernelEx would, which may end the
 * capture; its status is CUDA's. ordo makes its own calls that CUDA restricts during captures (a ring's
 * pinned allocation, a cache's graph instantiation, upload, destruction) with the calling thread's
 * capture mode exchanged to relaxed (cudaThreadExchangeStreamCaptureMode), restored before it
 * returns, so they neither fail nor invalidate any capture. While the stream captures, CUDA forbids any query of
 * it (its device included: the query would invalidate the capture), so ordo takes the calling
 * thread's current device as the stream's device: keep the stream's device current while capturing.
 * Work captured into a graph runs at every launch of it: the memory it uses must be valid then.
 * While an ordo call on a stream runs, no other thread may begin or end a capture on that stream
 * (cudaStreamBeginCapture, cudaStreamEndCapture), nor on a stream the call's work joins: ordo asks
 * once whether the stream captures and acts on the answer, and a capture begun meanwhile could
 * capture work meant to run once (the staging ring's slot-release host function, which would then
 * run at every replay), or end with ordo's internal streams unjoined. This is CUDA's own rule for
 * any work enqueued on a stream while another thread begins or ends its capture (which side of the
 * capture the work lands on is not defined), and the Rust API's capture contract asks the same
 * (until a capture ends, its stream is used only by the capturing code).
 * cudaStreamLegacy and captures: CUDA documents work on cudaStreamLegacy while any blocking stream
 * captures (cudaStreamPerThread is one: a graph cache run on it captures it) as refused with
 * cudaErrorStreamCaptureImplicit; a copy and synchronise on the legacy stream while another thread
 * begins and ends captures (relaxed mode, on its own blocking stream) crash the process instead
 * (CB-03). So a program passes
 * cudaStreamLegacy to ordo only while no thread of the process captures a blocking stream.
 *
 * DEVICE POINTERS passed with a stream must be device memory of the stream's device, or managed
 * memory: the work runs on the stream's device whatever the current device is, and memory of
 * another device, or host memory, gives ORDO_ERROR_INVALID_ARGUMENT (cudaPointerGetAttributes
 * tells) rather than a fault on the device. This holds for every export that takes device memory:
 * the NCCL collectives' buffers (of the communicator's device) and a staging ring's destination
 * (of the ring's device) included. ordo cannot see an allocation's size: sizes are the caller's promise. ordo
 * learns a stream's device from cudaStreamGetDevice (CUDA 12.8 and later); built against an older
 * toolkit it takes the calling thread's current device as the stream's: keep it current, or a
 * stream and memory of another device are refused with ORDO_ERROR_INVALID_ARGUMENT.
 *
 * AFTER cudaDeviceReset every stream, event, graph and allocation made before is gone, and CUDA
 * itself may crash on a handle of the destroyed context (destroying or launching an old executable
 * graph segfaults: CB-17). ordo remembers the context each handle's CUDA
 * objects were made in (a timer's and a ring's: the device current at create; a graph cache's
 * graphs: the stream's device at each one's capture) and never touches them once that context is
 * gone: calls on such a handle return cudaErrorContextIsDestroyed (709), and destroying it is safe
 * (its CUDA objects are forgotten, CUDA having freed them; so is a ring's pinned memory whose free
 * was deferred past the reset, never passed to cudaFreeHost). Make new handles after the reset.
 * ordo's internal pipelines are replaced the same way, so ordo_pipeline_run works again at once,
 * and so does ordo_pipeline_run_on on a pipeline without a pool (a pool made before the reset is
 * gone with it: destroy such a pipeline and make a new one with a new pool).
 * Streams and memory the caller made before the reset are the caller's to forget.
 */
#ifndef ORDO_H
#define ORDO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

/* A status: a fixed-width int. 0 is success; positive values are CUDA's cudaError_t codes, passed
 * through unchanged; ordo's own codes are negative, where CUDA has none (CUDA's codes are all
 * non-negative, up to cudaErrorApiFailureBase = 10000 and beyond), so the two never collide. */
typedef int32_t ordo_status;

enum ordo_status_code {
    ORDO_SUCCESS = 0,
    /* Not a failure: the answer "not yet" (a staging ring with no free slot, acquired without
     * waiting; a timer whose stop event has not completed). Equal to cudaErrorNotReady. Test
     * failures with ORDO_FAILED(status), which counts neither success nor this. */
    ORDO_NOT_READY = 600,
    /* A NULL or misaligned pointer, a zero or mismatched size, a size whose byte count overflows,
     * a value out of range. */
    ORDO_ERROR_INVALID_ARGUMENT = -1,
    /* Pageable host memory where pinned or registered memory is required. */
    ORDO_ERROR_PAGEABLE_MEMORY = -2,
    /* Not supported by the CUDA version ordo was built against, or by the device. */
    ORDO_ERROR_NOT_SUPPORTED = -3,
    /* A Rust panic was caught at the boundary. */
    ORDO_ERROR_PANIC = -4,
    /* A CUDA library (cuBLAS, NCCL) failed, or a callback returned a status that is neither
     * success, a CUDA code nor one of these. */
    ORDO_ERROR_LIBRARY = -5,
    /* Not a live handle of the expected kind: NULL, destroyed, never made by ordo, or of another
     * kind. */
    ORDO_ERROR_INVALID_HANDLE = -6,
    /* Refused because the stream is capturing, before anything was enqueued: the capture is
     * untouched. */
    ORDO_ERROR_STREAM_CAPTURING = -7,
    /* A callback called back into the handle whose call is running it, on the same thread (a
     * graph cache's body calling its own cache would recurse without end). Nothing was done. */
    ORDO_ERROR_HANDLE_BUSY = -8,
    /* A staging-ring ticket the ring does not hold: never issued by it, already submitted or
     * released, or released by the ring's destroy. Nothing was done. */
    ORDO_ERROR_INVALID_TICKET = -9
};

/* Whether a status is a failure: neither ORDO_SUCCESS nor ORDO_NOT_READY. */
#define ORDO_FAILED(status) ((status) != ORDO_SUCCESS && (status) != ORDO_NOT_READY)

/* Version and build information. ordo_version is the ordo crate's version, e.g. "0.1.0";
 * ordo_version_number the same as MAJOR * 1000000 + MINOR * 1000 + PATCH. The macros below are the
 * version of this header (a test keeps them equal to the crate's): a program checks at start that
 * the library it runs with is the one its header came from,
 *     if (ordo_version_number() != ORDO_VERSION_NUMBER) { ... refuse to run ... }
 * ABI policy while ordo is 0.x: a release that changes MINOR may change the C ABI (functions,
 * handle rules, status values); one that changes only PATCH does not. */
#define ORDO_VERSION_MAJOR 0
#define ORDO_VERSION_MINOR 1
#define ORDO_VERSION_PATCH 0
#define ORDO_VERSION_NUMBER (ORDO_VERSION_MAJOR * 1000000 + ORDO_VERSION_MINOR * 1000 + ORDO_VERSION_PATCH)
const char* ordo_version(void);
int ordo_version_number(void);
int ordo_cuda_version(void);
ordo_status ordo_runtime_version(int* out);

/* Status names and descriptions (static strings); 1 if the status is a sticky CUDA error. */
const char* ordo_status_name(ordo_status status);
const char* ordo_status_string(ordo_status status);
int ordo_status_is_sticky(ordo_status status);

/* The calling thread's last error. Every export that fails records, on its thread, what it knew:
 * the status it returned, CUDA's code when the failure came from CUDA, another library's or a
 * callback's status, whether the error is sticky, the call that failed (a CUDA function, an ordo
 * function, or the export; for an argument the export refused, the export and the argument, as
 * "ordo_staging_ring_create(slots)") and a message. A successful export leaves the record as it was (as
 * errno does); ordo_clear_last_error forgets it.
 *
 *     ordo_error_info info;
 *     info.size = sizeof info;
 *     if (ordo_pdl_chain(...) != ORDO_SUCCESS && ordo_last_error(&info) == ORDO_SUCCESS)
 *         fprintf(stderr, "%s (in %s)\n", info.message, info.call);
 *
 * `size` lets later versions add fields at the end: set it to sizeof(ordo_error_info). */
#define ORDO_LAST_ERROR_CALL_LEN 64
#define ORDO_LAST_ERROR_MESSAGE_LEN 512
typedef struct ordo_error_info {
    size_t size;          /* sizeof(ordo_error_info), set by the caller */
    ordo_status status;   /* the failing export's status; ORDO_SUCCESS when none failed here */
    int cuda_error;       /* CUDA's code when the failure came from CUDA, else 0 */
    int library_status;   /* cuBLAS's, NCCL's or a callback's own status, else 0 */
    int sticky;           /* 1 when the error is sticky (the CUDA context is lost) */
    char call[64];        /* the call that failed, NUL-terminated (ORDO_LAST_ERROR_CALL_LEN) */
    char message[512];    /* what went wrong, NUL-terminated (ORDO_LAST_ERROR_MESSAGE_LEN) */
} ordo_error_info;

/* Fills *info; ORDO_ERROR_INVALID_ARGUMENT (nothing written) for NULL, a misaligned pointer or a
 * size below this header's sizeof(ordo_error_info). Does not itself change the record. */
ordo_status ordo_last_error(ordo_error_info* info);
/* Copies the message into buf (len bytes, NUL-terminated, truncated to fit; nothing written when
 * buf is NULL or len is 0) and returns its full length without the NUL, as snprintf does; 0 when
 * no export has failed on this thread. */
size_t ordo_last_error_message(char* buf, size_t len);
void ordo_clear_last_error(void);

/* Allocation options of the exports that allocate a temporary (see ALLOCATION), for their _with
 * forms; options NULL: the defaults. Set size to sizeof(ordo_alloc_options) (a smaller size gives
 * ORDO_ERROR_INVALID_ARGUMENT). pool: the pool the temporary comes from (cudaMallocFromPoolAsync
 * on the call's stream, freed on it); NULL for ordo's pool of the device (ordo_temporary_pool). It
 * must be readable and writable by the stream's device (ORDO_ERROR_INVALID_ARGUMENT otherwise) and
 * stay alive until the work completes (at every replay, if captured). */
typedef struct ordo_alloc_options {
    size_t size;
    struct CUmemPoolHandle_st* pool;
} ordo_alloc_options;
#define ORDO_ALLOC_OPTIONS_INIT { sizeof(ordo_alloc_options), NULL }

/* ordo's pool for the temporaries of the exports that allocate one (see ALLOCATION) on `device`
 * (-1: the calling thread's current device), made if it does not exist yet, into *pool. One pool a
 * device (made anew after a cudaDeviceReset); a pool of default properties, so that captured
 * temporaries are allocation nodes. It keeps what ordo's temporaries needed at most, up to an
 * eighth of the device's memory, mapped across synchronisations (its release threshold):
 * cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, ...) changes that cap (0 keeps
 * nothing) and cudaMemPoolTrimTo(pool, 0) returns what it holds now. Its allocations never wait
 * for another stream's pending free (cudaMemPoolReuseAllowInternalDependencies is 0). It grants
 * peers the access the device's current pool grants them when it is made; cudaMemPoolSetAccess
 * grants more. Do not destroy it. A device below -1 or not below the device count:
 * ORDO_ERROR_INVALID_ARGUMENT. */
ordo_status ordo_temporary_pool(int device, struct CUmemPoolHandle_st** pool);

/* y = normalize(A x); a is row-major rows x cols; all device memory. rows 1 to 2^26 and cols 1 to
 * 2^31 - 32 (the kernels index in 32 bits): ORDO_ERROR_INVALID_ARGUMENT beyond, before anything is
 * enqueued. Kernels, and for more than 1024 rows a 4-byte stream-ordered temporary: capturable. */
ordo_status ordo_gemv_normalize(struct CUstream_st* stream, const float* a, const float* x, float* y, size_t rows, size_t cols);
ordo_status ordo_gemv_normalize_with(const ordo_alloc_options* options, struct CUstream_st* stream, const float* a, const float* x, float* y, size_t rows, size_t cols);

/* Grayscale + 5x5 Gaussian blur of an interleaved-RGB frame (device memory), through a
 * stream-ordered intermediate of 4 bytes a pixel. Capturable. */
ordo_status ordo_frame_filter(struct CUstream_st* stream, const uint8_t* rgb, uint8_t* out, size_t width, size_t height);
ordo_status ordo_frame_filter_with(const ordo_alloc_options* options, struct CUstream_st* stream, const uint8_t* rgb, uint8_t* out, size_t width, size_t height);

/* Launching your own kernels with ordo's launch configuration. kernel: the __global__ function's
 * address (as cudaLaunchKernel takes it), or its cudaKernel_t (cudaGetKernel); include the CUDA
 * runtime's header before ordo.h (LINKING AND YOUR OWN KERNELS, at the top), so that the kernel is
 * found in every link of the program; args: one pointer to each argument, in order (NULL for a
 * kernel without parameters). The configuration is checked as ordo's Rust API checks it (zero or
 * oversized grid or block, a grid not a multiple of its cluster, a cooperative grid larger than the
 * device holds at once, a cooperative launch with clusters, an unknown mem_sync_domain, a
 * preferred_cluster without cluster, not a multiple of it or not dividing the grid:
 * ORDO_ERROR_INVALID_ARGUMENT before CUDA is called). Set size to sizeof(ordo_launch_config); the
 * sizes of the earlier layouts (the first up to and including cooperative, the second up to and
 * including launch_completion_event) are accepted too, and the fields after them are then not
 * set; any other smaller size is ORDO_ERROR_INVALID_ARGUMENT. cluster all 0 for none.
 * Capturable. */
#define ORDO_MEM_SYNC_DOMAIN_DEFAULT 1
#define ORDO_MEM_SYNC_DOMAIN_REMOTE 2
typedef struct ordo_launch_config {
    size_t size;
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem_bytes;
    int pdl;           /* programmatic stream serialization (PDL) */
    int has_priority;  /* non-zero: priority applies */
    int priority;      /* lower is higher, as for streams */
    unsigned int cluster[3];
    int cooperative;   /* every block resident at once: grid-wide sync allowed */
    /* Since 0.1.0's second layout (a caller whose size ends before these gets none of them):
     * events the launch records, each NULL for none, each made with cudaEventDisableTiming on the
     * stream's device and alive at the launch (captured: at every replay of the graph). programmatic_event fires once every block has
     * called cudaTriggerProgrammaticLaunchCompletion() (or at its end), or as each block starts
     * when programmatic_event_at_block_start is non-zero; launch_completion_event once every
     * block has started. Work that waits on them may overlap the kernel. */
    struct CUevent_st* programmatic_event;
    int programmatic_event_at_block_start;
    struct CUevent_st* launch_completion_event;
    /* Since the third layout (a caller whose size ends before these gets neither):
     * mem_sync_domain: 0 not set, ORDO_MEM_SYNC_DOMAIN_DEFAULT or ORDO_MEM_SYNC_DOMAIN_REMOTE
     * (cudaLaunchAttributeMemSyncDomain, sm_90 and later: the kernel's memory fences order only
     * with work of its own domain, so a communication kernel in the remote domain need not wait
     * for compute kernels' fences); any other value is ORDO_ERROR_INVALID_ARGUMENT.
     * preferred_cluster: all 0 for none; else cluster dimensions the device groups blocks into
     * where it can, falling back to cluster (cudaLaunchAttributePreferredClusterDimension): cluster
     * must be set, and preferred_cluster a multiple of it that divides the grid (CUDA also wants
     * its z equal to cluster's, and refuses with its code otherwise). ordo built against CUDA
     * headers older than 12.8 refuses it with ORDO_ERROR_NOT_SUPPORTED. */
    int mem_sync_domain;
    unsigned int preferred_cluster[3];
} ordo_launch_config;
ordo_status ordo_launch_kernel(struct CUstream_st* stream, const void* kernel, void** args, const ordo_launch_config* config);

/* The PDL rule for a kernel compiled in two forms by ORDO_PDL_KERNELS (ordo/pdl.cuh), ordo_pdl_plan_launch: plain and
 * pdl are NAME and NAME_pdl. For n elements in blocks of `block` threads on `device`, out says
 * which form to launch (use_pdl_form: NAME_pdl with pdl set in its ordo_launch_config, except for
 * a chain's first kernel; else NAME without PDL) over how many blocks (grid; the body is a
 * grid-stride loop). mode: ORDO_PDL_AUTO (ordo's rule: PDL within one wave of blocks; beyond, a
 * one-wave grid-stride grid, with PDL up to four waves of work and without past them),
 * ORDO_PDL_AUTO_PLAIN_BEYOND_ONE_WAVE (the plain full grid beyond
 * one wave), or one form forced for measuring. A few occupancy queries: once per size, not per
 * launch. Set out->size to sizeof(ordo_pdl_plan). */
#define ORDO_PDL_AUTO 0
#define ORDO_PDL_PLAIN 1
#define ORDO_PDL_PLAIN_ONE_WAVE 2
#define ORDO_PDL_FULL_GRID 3
#define ORDO_PDL_ONE_WAVE 4
#define ORDO_PDL_AUTO_PLAIN_BEYOND_ONE_WAVE 5
typedef struct ordo_pdl_plan {
    size_t size;
    int use_pdl_form;
    unsigned int grid;
    unsigned int full_blocks;
    unsigned int one_wave_blocks;
} ordo_pdl_plan;
ordo_status ordo_pdl_plan_launch(const void* plain, const void* pdl, int device, size_t n, unsigned int block, int mode, ordo_pdl_plan* out);

/* ordo_launch_kernel and ordo_pdl_plan_launch with the caller's cudaGetKernel (resolver; NULL for
 * none), for a program with its own copy of the CUDA runtime (LINKING AND YOUR OWN KERNELS, at the
 * top). A call of ordo_launch_kernel or ordo_pdl_plan_launch from a file that includes the CUDA
 * runtime's header (CUDA 12.0 or later) first comes here by itself, with ordo_kernel_resolver_here
 * below; call these directly only to pass another resolver. Built against CUDA before 12.8,
 * resolver is never called. Otherwise ordo asks resolver for a kernel's handle only where its table
 * of kernels holds no handle for that address:
 * - at the kernel's first launch or plan;
 * - after resolver failed there, where ordo's own runtime said the address is none of its kernels
 *   too (a cudaKernel_t of the caller's, a stub of another copy of the runtime), only with another
 *   resolver than the last one that failed for that address (resolvers are told apart by their
 *   function pointer; ordo_kernel_resolver_here is a function of each file that includes ordo.h,
 *   so a call from another file asks its own). So a kernel first launched from a file whose
 *   runtime does not know it (a library with its own static runtime handing its kernel to the
 *   program) still resolves when the library's own file launches it, and from then on everywhere;
 * - at each call while the table has no room left for the address (or for more addresses that
 *   are none of ordo's runtime's kernels: a quarter of it), while another thread is entering it,
 *   or while ordo's own runtime could not answer (no driver, a sticky error).
 * A handle resolver gives is kept for the process (later calls without a resolver use it too) and
 * launched; where resolver fails, ordo's own runtime resolves the kernel, as without one. The
 * caller's contract, which ordo cannot check: resolver does what cudaGetKernel does (on success it
 * writes the cudaKernel_t of the kernel whose host stub is `entry` and returns 0; otherwise it
 * returns non-zero), returns (no C++ exception, no longjmp), and its handle stays valid while the
 * kernel's code stays loaded (the copy of the CUDA runtime that made it is not unloaded: a shared
 * library with its own static runtime is not dlclose'd). A handle of another kernel, or a forged
 * one, is launched in that kernel's place from then on, by every call.
 * Define ORDO_NO_KERNEL_RESOLVER before including ordo.h to keep the plain calls (a file that must
 * not reference cudaGetKernel); (ordo_launch_kernel)(...), in parentheses, calls the plain export,
 * and so does every use of the name that is not a call: &ordo_launch_kernel, or
 * ordo_launch_kernel passed or stored as a function pointer, is the plain export, silently (the
 * routing is a function-like macro); pass ordo_launch_kernel_resolved with a resolver instead. The
 * same holds for ordo_pdl_plan_launch. */
struct CUkern_st;
typedef int (*ordo_kernel_resolver_fn)(struct CUkern_st** kernel, const void* entry);
ordo_status ordo_launch_kernel_resolved(struct CUstream_st* stream, const void* kernel, void** args, const ordo_launch_config* config, ordo_kernel_resolver_fn resolver);
ordo_status ordo_pdl_plan_launch_resolved(const void* plain, const void* pdl, int device, size_t n, unsigned int block, int mode, ordo_pdl_plan* out, ordo_kernel_resolver_fn resolver);
#if defined(CUDART_VERSION) && !defined(ORDO_NO_KERNEL_RESOLVER) && CUDART_VERSION >= 12000
/* cudaGetKernel of the CUDA runtime this file is linked with (CUDA 12.0 and later have it; before,
 * the calls stay plain). Its failure (an address that is no kernel of this runtime, such as a
 * cudaKernel_t) is cleared from that runtime's last error when no error was pending there before
 * the call. When one was, the call leaves it pending but cannot keep its code: cudaGetKernel's
 * failure overwrites the runtime's last error, and the runtime has no call to put the earlier one
 * back, so cudaGetLastError then returns cudaErrorInvalidDeviceFunction instead of it (an error is
 * still reported; ordo's own query of its runtime keeps that too). This happens only on the calls
 * that ask the resolver and where it fails (above); read cudaGetLastError before such a first
 * launch where its code matters. */
static inline int ordo_kernel_resolver_here(struct CUkern_st** kernel, const void* entry) {
    cudaError_t pending = cudaPeekAtLastError();
    cudaError_t status = cudaGetKernel(kernel, entry);
    if (status != cudaSuccess && pending == cudaSuccess) (void)cudaGetLastError();
    return (int)status;
}
#define ordo_launch_kernel(...) ordo_launch_kernel_resolved(__VA_ARGS__, ordo_kernel_resolver_here)
#define ordo_pdl_plan_launch(...) ordo_pdl_plan_launch_resolved(__VA_ARGS__, ordo_kernel_resolver_here)
#endif

/* `steps` dependent kernels out = prev * scale + 1, ping-ponging a -> b -> a ... (the result is
 * in b after an odd number of steps, in a after an even one); pdl: 0 off (the step compiled
 * without griddepcontrol, one element a thread), 1 ordo's rule (Programmatic Dependent Launch
 * within one wave of blocks; beyond, a one-wave grid-stride grid, with PDL up to four waves of
 * work; see ordo/pdl.cuh). steps 1 to 2^24 (16777216); a and
 * b are the same pointer (each step in place) or n-float ranges that do not overlap; scale's range
 * overlaps neither (each step reads scale before waiting for the previous step). Otherwise
 * ORDO_ERROR_INVALID_ARGUMENT, before anything is enqueued. Capturable. */
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
 * `stream`, ordo writes nothing more. Capturable in every mode; the graph replays the whole run.
 * host_in and host_out are one buffer (the run in place) or do not overlap; likewise dev_in and
 * dev_out (ORDO_ERROR_INVALID_ARGUMENT otherwise: a shifted overlap would have a later chunk's
 * copy in race an earlier chunk's copy out or compute). The same holds for ordo_pipeline_run_on.
 * A pipeline whose run was captured stays reserved for that capture until the capture ends; at most
 * 256 a device are kept so: a run that would need another gets cudaErrorMemoryAllocation (end or
 * abandon the open captures). Idle pipelines are kept up to 16 a device. */
typedef ordo_status (*ordo_compute_fn)(struct CUstream_st* stream, const float* input, float* output, size_t n, void* user);
ordo_status ordo_pipeline_run(struct CUstream_st* stream, const float* host_in, float* dev_in, float* dev_out, float* host_out, size_t n, size_t chunks, ordo_compute_fn compute, void* user);

/* A pipeline handle: the chunked pipeline above, made explicitly with options instead of the hidden
 * pool ordo_pipeline_run uses. ordo_pipeline_create checks the options and makes the first internal
 * pipeline (its streams and events) on the pipeline's device, so that a bad device or priority fails
 * there; options NULL: the defaults, ORDO_PIPELINE_OPTIONS_INIT. Set size to
 * sizeof(ordo_pipeline_options) (NCCL's ncclConfig_t pattern: later versions add fields at the end
 * and accept this size); a smaller size gives ORDO_ERROR_INVALID_ARGUMENT, nothing read beyond it.
 * - device: the device ordinal, or -1 for the device current at create.
 * - element_size: bytes an element, 1 or more. Runs count n in elements, chunks are cut at element
 *   boundaries, and compute gets element counts. Host and device pointers must be aligned to the
 *   largest power of two that divides element_size, at most 16 (ORDO_ERROR_INVALID_ARGUMENT).
 * - streams: worker streams, 0 for 3 (the staged schedule's), at most 64; 1 and 2 also give 3
 *   (the staged schedule needs one stream a stage).
 * - priority: the worker streams' priority, 0 for CUDA's default; within the device's
 *   cudaDeviceGetStreamPriorityRange (lower numbers are higher priorities), else
 *   ORDO_ERROR_INVALID_ARGUMENT.
 * - chunks: chunks a run, at most 65536 and at most n at each run; 0: ordo's planner chooses
 *   from n * element_size bytes each way (the copy model of ordo_cuda_core::pipeline, assuming the
 *   55 GB/s host link of its MachineModel::H200_PCIE5 and a compute that is not the slowest stage).
 * - stage_timing: 1 records timing events around each chunk's stages (about 3% slower), 0 (the
 *   default) only the events the cross-stream waits need. (The stage times are read from Rust;
 *   the C ABI has no reader yet.)
 * - pool: the memory pool ordo's temporaries come from (cudaMallocFromPoolAsync on the run's
 *   stream, freed on it with cudaFreeAsync after the run's join); NULL for ordo's pool of the
 *   device (ordo_temporary_pool). It must be readable and writable by the device (ORDO_ERROR_INVALID_ARGUMENT
 *   otherwise) and stay alive until the pipeline is destroyed and its work has completed. While the
 *   stream captures, the temporaries are allocation and free nodes of the caller's graph.
 * ordo_pipeline_run_on: as ordo_pipeline_run, on `pipeline`'s internal pipelines, over n elements of
 * element_size bytes. `stream` must be a stream of the pipeline's device. dev_in and dev_out may be
 * NULL: each NULL one is a temporary of n elements from the pipeline's pool, allocated on `stream`
 * before the run and freed on it after, on every path out. compute NULL: ordo's 64-step kernel,
 * for element_size 4 only (floats; ORDO_ERROR_INVALID_ARGUMENT otherwise). Threads: any number of
 * threads may run one pipeline at once, each on an internal pipeline of its own (made when none is
 * idle; the same limits of 16 idle and 256 held by open captures apply to each handle); compute may
 * call back into any pipeline, its own included. Capturable in every mode, as ordo_pipeline_run.
 * ordo_pipeline_destroy: NULL, destroyed and unknown handles are ignored; internal pipelines still
 * held by an open capture live until that capture ends (their streams belong to it). */
typedef struct OrdoPipeline ordo_pipeline;
typedef struct ordo_pipeline_options {
    size_t size;
    int device;
    size_t element_size;
    size_t streams;
    int priority;
    size_t chunks;
    int stage_timing;
    struct CUmemPoolHandle_st* pool;
} ordo_pipeline_options;
#define ORDO_PIPELINE_OPTIONS_INIT { sizeof(ordo_pipeline_options), -1, 4, 0, 0, 0, 0, NULL }
typedef ordo_status (*ordo_pipeline_fn)(struct CUstream_st* stream, const void* input, void* output, size_t n, void* user);
ordo_status ordo_pipeline_create(const ordo_pipeline_options* options, ordo_pipeline** out);
ordo_status ordo_pipeline_run_on(ordo_pipeline* pipeline, struct CUstream_st* stream, const void* host_in, void* dev_in, void* dev_out, void* host_out, size_t n, ordo_pipeline_fn compute, void* user);
void ordo_pipeline_destroy(ordo_pipeline* pipeline);

/* A stencil over the rows of a frame on a pipeline handle: `rows` input rows of in_row_bytes
 * bytes (host_in -> dev_in) and as many output rows of out_row_bytes (dev_out -> host_out), cut
 * into chunks of whole rows, where each chunk's compute reads `halo` rows before and after the
 * rows it writes (fewer at the frame's edges: the halo is clamped there). A vertical blur with a
 * horizontal 2x downsample of a frame of floats, say: in_row_bytes = width * 4, out_row_bytes =
 * width / 2 * 4, halo = the blur's radius. Each input row is copied in once, by its own chunk;
 * a chunk's compute waits for the copy-ins of the chunks whose rows it reads.
 * - compute (required: NULL gives ORDO_ERROR_INVALID_ARGUMENT) runs once a chunk, on the calling
 *   thread, with the internal stream it must enqueue on: `input` points to input row
 *   first_row - before of dev_in and holds before + rows + after rows; `output` points to output
 *   row first_row of dev_out and holds `rows` rows. It may read only those input rows and must not
 *   write them (the computes of neighbouring chunks read them too, possibly at the same time on
 *   other streams); it writes only its output rows.
 * - The pipeline's options apply as for ordo_pipeline_run_on (streams, priority, stage timing, pool,
 *   chunks: 0 plans from rows * in_row_bytes bytes in and rows * out_row_bytes out, else 1 to
 *   `rows`), except element_size, which is not used: rows are the records. host_in and dev_in
 *   must be aligned to the largest power of two that divides in_row_bytes (at most 16), host_out
 *   and dev_out to that of out_row_bytes. host_in must not overlap host_out, nor dev_in dev_out
 *   (ORDO_ERROR_INVALID_ARGUMENT: no stencil runs in place, as a halo reads rows that other chunks
 *   write). NULL dev_in or dev_out: a temporary of the input's or
 *   the output's size from the pipeline's pool, allocated on `stream` before the run and freed on
 *   it after, on every path out.
 * - rows 0, a row size of 0, byte counts that overflow, or more chunks than rows give
 *   ORDO_ERROR_INVALID_ARGUMENT before anything is enqueued; pageable host memory
 *   ORDO_ERROR_PAGEABLE_MEMORY. Failures, joins, threads and captures as ordo_pipeline_run_on. */
typedef ordo_status (*ordo_stencil_fn)(struct CUstream_st* stream, const void* input, void* output, size_t first_row, size_t rows, size_t before, size_t after, void* user);
ordo_status ordo_pipeline_run_stencil(ordo_pipeline* pipeline, struct CUstream_st* stream, const void* host_in, void* dev_in, void* dev_out, void* host_out, size_t rows, size_t in_row_bytes, size_t out_row_bytes, size_t halo, ordo_stencil_fn compute, void* user);

/* Graphs cached per batch-size bucket. body enqueues the work for `bucket` elements on the stream
 * it is given, over buffers the caller holds; the memory it uses must stay valid until the cache
 * is destroyed and the work it launched has completed. n_buckets 0: the buckets 1, 2, 4, ... 256 (buckets is ignored); otherwise buckets
 * points to n_buckets strictly increasing, non-zero values (NULL or misaligned:
 * ORDO_ERROR_INVALID_ARGUMENT). overflow_eager: run sizes over the largest bucket eagerly instead
 * of failing with ORDO_ERROR_INVALID_ARGUMENT.
 * body is called, on the thread of the run or capture_all that needs it, in one of three ways:
 * - to capture a bucket's graph: `stream` is then capturing, in a capture ordo began in the cache's
 *   capture mode (thread-local unless the options say otherwise) and ends itself before the call
 *   returns; meanwhile no other thread may enqueue work on `stream` (it would join the capture),
 *   as for any capture;
 * - when run is called while the caller's `stream` captures: straight into the caller's capture,
 *   in the caller's capture mode (a graph launch would invalidate the capture);
 * - for a size over the largest bucket with overflow_eager: eagerly, `stream` not capturing.
 * The calling thread's capture mode during body is the one it had when it called ordo. body may
 * run on several threads at once, for different buckets or the same one (two threads that find a
 * bucket not yet captured both capture it: the first graph is kept, the other is destroyed
 * unlaunched), so it, and `user`, must be safe to use from several threads at once.
 * run: replays the graph of the bucket n rounds up to (capturing it first on `stream` if needed);
 * n 0 rounds up to the first bucket, as in the Rust API (GraphCache::run); the bucket used (or n,
 * run eagerly) goes to bucket_out (may be NULL). The first replay of a graph not uploaded at its
 * capture (ordo_graph_cache_options.upload 0, the default) uploads it: like an instantiation, a
 * capture-unsafe call (see CAPTURES), which waits for another thread's graph cache capturing in
 * ORDO_CAPTURE_GLOBAL mode (see THREADS). Replays of one cache on several streams share the
 * cache's buffers and are not ordered with each other: order them if they overlap.
 * capture_all: captures every bucket not captured yet; ORDO_ERROR_STREAM_CAPTURING while `stream`
 * captures.
 * destroy: NULL, destroyed and unknown handles are ignored. It may be called while calls of the
 * cache run, from another thread or from the cache's own body, and it does not wait for them:
 * from the moment it returns no call of the cache launches a graph, and a call that finds the
 * cache destroyed calls the body no more and returns ORDO_ERROR_INVALID_HANDLE. A call running
 * on another thread may still be in its body, or about to enter it (it looked at the cache just
 * before the destroy): that body call runs to its end, and what it enqueues eagerly (a warmup,
 * an overflow_eager run) runs. So the buffers the body uses may be freed once the destroy has
 * returned, every call of the cache that was running on another thread meanwhile has returned,
 * and the work enqueued until then has completed (the moment user_free marks: keeping the
 * buffers with `user` and freeing them there does it). `user` is released through user_free
 * once the last call still running has returned (see CALLBACKS). */
typedef struct OrdoGraphCache ordo_graph_cache;
typedef ordo_status (*ordo_capture_fn)(struct CUstream_st* stream, size_t bucket, void* user);
ordo_status ordo_graph_cache_create(const size_t* buckets, size_t n_buckets, int overflow_eager, ordo_capture_fn body, void* user, ordo_graph_cache** out);

/* Options of a graph cache, for ordo_graph_cache_create_with_options (NULL: the defaults, as
 * ordo_graph_cache_create with overflow_eager 0). Set size to sizeof(ordo_graph_cache_options).
 * Zeroed options (but size) are the defaults: ORDO_GRAPH_CACHE_OPTIONS_INIT.
 * capture_mode: how the cache's own captures run (ORDO_CAPTURE_THREAD_LOCAL, 0, the default: a
 * capture-unsafe call from the capturing thread fails the capture; ORDO_CAPTURE_GLOBAL: from any
 * thread, and the caller owes what CAPTURES asks of global mode while the cache captures, which is
 * during a bucket's first run and capture_all; ORDO_CAPTURE_RELAXED: the caller vouches that
 * nothing capture-unsafe runs). These are not CUDA's cudaStreamCaptureMode values: 0 is the safe
 * default. warmup non-zero: the body runs once, eagerly, before each capture
 * (lazy initialisation happens outside the capture; its work runs as a run of that bucket would).
 * instantiate_flags: cudaGraphInstantiateFlagAutoFreeOnLaunch, cudaGraphInstantiateFlagUseNodePriority
 * or 0. capture_all captures from the largest bucket to the smallest. upload non-zero: each graph
 * is uploaded (cudaGraphUpload) right after its instantiation, so that its first replay does not
 * upload; 0, the default (as the Rust API's CacheOptions::upload): the first replay of each bucket
 * uploads its graph, which keeps a capture of every bucket close to the hand-written loop of
 * captures and instantiations. The size of the first layout (up to and including user_free) is
 * accepted too, with upload 0; any other size below sizeof(ordo_graph_cache_options), or a bad
 * value: ORDO_ERROR_INVALID_ARGUMENT. */
#define ORDO_CAPTURE_THREAD_LOCAL 0
#define ORDO_CAPTURE_GLOBAL 1
#define ORDO_CAPTURE_RELAXED 2
typedef void (*ordo_user_free_fn)(void* user);
typedef struct ordo_graph_cache_options {
    size_t size;
    int capture_mode;
    int warmup;
    int overflow_eager;
    uint64_t instantiate_flags;
    /* Called exactly once with `user`: after the cache is destroyed and no call of it runs any
     * more, or when the create fails (once the options could be read). NULL for none. It must not
     * throw and must not call ordo. */
    ordo_user_free_fn user_free;
    /* Since the second layout (a caller whose size ends before it gets 0): non-zero uploads each
     * graph at its capture; 0 (the default) leaves the upload to its first replay. */
    int upload;
} ordo_graph_cache_options;
#define ORDO_GRAPH_CACHE_OPTIONS_INIT { sizeof(ordo_graph_cache_options), ORDO_CAPTURE_THREAD_LOCAL, 0, 0, 0, NULL, 0 }
ordo_status ordo_graph_cache_create_with_options(const size_t* buckets, size_t n_buckets, const ordo_graph_cache_options* options, ordo_capture_fn body, void* user, ordo_graph_cache** out);
ordo_status ordo_graph_cache_capture_all(ordo_graph_cache* cache, struct CUstream_st* stream);
ordo_status ordo_graph_cache_run(ordo_graph_cache* cache, struct CUstream_st* stream, size_t n, size_t* bucket_out);
void ordo_graph_cache_destroy(ordo_graph_cache* cache);

/* A ring of pinned staging slots: acquire a slot (its memory and a ticket), fill it, submit its
 * copy; the slot is free again once the copy has finished.
 * create: 1 to 65536 slots (ORDO_ERROR_INVALID_ARGUMENT beyond); cudaErrorMemoryAllocation when
 * the memory cannot be had.
 * Tickets are numbers from a counter that is never reused (never 0): a ticket names its slot from
 * acquire until it is submitted or released, and never again; a ticket the ring does not hold
 * (never issued by it, already submitted or released, released by destroy) gives
 * ORDO_ERROR_INVALID_TICKET and touches no slot.
 * acquire: wait 0: ORDO_NOT_READY when no slot is free; wait 1: waits on the host for a slot
 * whose copy is in flight, and returns ORDO_NOT_READY as soon as every slot is held by a ticket
 * not yet submitted or released, or by a graph (at the start or during the wait), since nothing
 * could come free by waiting; CUDA's error when the context is lost, cudaErrorContextIsDestroyed
 * after cudaDeviceReset; ORDO_ERROR_INVALID_HANDLE when another thread destroys the ring.
 * The slot's memory (slot_bytes bytes) is the caller's to write until the ticket is submitted or
 * released, or the ring destroyed: a program that destroys a ring orders the destroy after every
 * thread has stopped writing its slots (as with free()). A ticket is used by the code that
 * acquired it (or was handed it): submitting or releasing another thread's ticket takes its slot
 * away while that thread may still write it.
 * submit: 1 <= bytes <= slot_bytes; `stream` a stream of the ring's device (the device current at
 * create) and device_dst device memory of that device, or managed memory (ORDO_ERROR_INVALID_ARGUMENT
 * otherwise, before anything is enqueued, the ticket still held); the ticket is used up by the call
 * once its arguments passed their checks, also if it then fails. Capturable: the captured copy runs
 * at every launch of the graph, and the slot stays held until the graph and every executable graph
 * made from it are destroyed.
 * release: frees a ticket's slot without copying it; the ticket is used up.
 * destroy: tickets not submitted are released; waiting acquires return; copies in flight and graphs
 * keep the pinned memory until they are done with it. */
typedef struct OrdoStagingRing ordo_staging_ring;
ordo_status ordo_staging_ring_create(size_t slots, size_t slot_bytes, ordo_staging_ring** out);
ordo_status ordo_staging_ring_acquire(ordo_staging_ring* ring, int wait, void** slot_out, size_t* ticket_out);
ordo_status ordo_staging_ring_submit(ordo_staging_ring* ring, size_t ticket, size_t bytes, void* device_dst, struct CUstream_st* stream);
ordo_status ordo_staging_ring_release(ordo_staging_ring* ring, size_t ticket);
void ordo_staging_ring_destroy(ordo_staging_ring* ring);

/* Event-based timing (events of the device current at create): start and stop on a stream (of
 * that device), elapsed milliseconds once stop has completed (ORDO_NOT_READY before; it never
 * waits; ORDO_ERROR_INVALID_ARGUMENT if either was never recorded). start and stop may be
 * captured; CUDA cannot time events recorded by a graph (elapsed then returns CUDA's error). */
typedef struct OrdoTimer ordo_timer;
ordo_status ordo_timer_create(ordo_timer** out);
ordo_status ordo_timer_start(ordo_timer* timer, struct CUstream_st* stream);
ordo_status ordo_timer_stop(ordo_timer* timer, struct CUstream_st* stream);
ordo_status ordo_timer_elapsed_ms(ordo_timer* timer, float* ms);
void ordo_timer_destroy(ordo_timer* timer);

/* NCCL (loaded at run time: libnccl.so.2, or the file the ORDO_NCCL environment variable names;
 * ORDO_NCCL set but empty counts as unset, and a file it names that cannot be opened is
 * ORDO_ERROR_NOT_SUPPORTED naming it, never a fall-back to another libnccl). No library, one too
 * old for a call, or a library built without the `nccl` feature: ORDO_ERROR_NOT_SUPPORTED. A failure of NCCL's:
 * ORDO_ERROR_LIBRARY. One process per rank: rank 0 writes a unique id (ordo_nccl_get_unique_id,
 * id_bytes must be ORDO_NCCL_UNIQUE_ID_BYTES), the caller carries the bytes to every rank (a file,
 * a pipe, TCP), and each rank makes its communicator on its device (ordo_nccl_comm_init_rank,
 * which blocks until every rank has joined). The collectives enqueue one NCCL call on `stream` (a
 * stream of the communicator's device), never synchronise, and are capturable; counts are in
 * elements of dtype (NCCL's values below), buffers device memory of the communicator's device (or
 * managed memory) that stays allocated until the work completes, and every rank must make the
 * matching call with the same count, dtype, op and root (NCCL cannot check other ranks' sizes). A
 * NULL or misaligned buffer, host memory or another device's, a stream of another device, a byte
 * count that overflows, a root not below nranks, an unknown dtype or op:
 * ORDO_ERROR_INVALID_ARGUMENT, before NCCL. Any thread may call; ordo serialises the calls on one handle, and NCCL calls for
 * communicators of one device (NCCL forbids them at once from several threads).
 * wait: waits at most timeout_ms for the work on `stream`, polling the communicator's health, so
 * that a dead peer gives ORDO_ERROR_LIBRARY instead of a hang; then abort the communicator. An
 * abort from another thread (a watchdog) gets in between two polls; the wait then returns
 * ORDO_ERROR_INVALID_HANDLE.
 * abort: stops the communicator's work and frees it without the other ranks, ending the handle.
 * destroy: waits for the queued collectives on every rank (use abort when a peer may be gone).
 * borrow: wraps a communicator made outside ordo (an engine's ncclComm_t, passed as void*) without
 * taking it over: its device, rank and nranks are asked of NCCL, and every ordo_nccl_* call works
 * on the handle. The caller owes: it was made by the NCCL library ordo loads (the libnccl.so.2 of
 * this process; ORDO_NCCL must not name another file); it stays alive (not destroyed, finalized,
 * aborted, shrunk or revoked) until ordo_nccl_comm_release has returned and the work enqueued
 * through the handle has completed; its owner makes no NCCL call on it, or on another communicator
 * of its device, while an ordo call on the handle runs; every rank makes the owner's and ordo's
 * calls in the same order. A communicator still being made (non-blocking, ncclInProgress):
 * ORDO_ERROR_INVALID_ARGUMENT. release: ends a borrowed handle (no NCCL call);
 * ORDO_ERROR_INVALID_ARGUMENT for a communicator ordo made. destroy and abort of a borrowed handle
 * are refused (ORDO_ERROR_INVALID_ARGUMENT, in ordo_last_error for destroy; the handle stays
 * valid). */
#define ORDO_NCCL_UNIQUE_ID_BYTES 128
#define ORDO_NCCL_INT8 0
#define ORDO_NCCL_UINT8 1
#define ORDO_NCCL_INT32 2
#define ORDO_NCCL_UINT32 3
#define ORDO_NCCL_INT64 4
#define ORDO_NCCL_UINT64 5
#define ORDO_NCCL_FLOAT16 6
#define ORDO_NCCL_FLOAT32 7
#define ORDO_NCCL_FLOAT64 8
#define ORDO_NCCL_BFLOAT16 9
#define ORDO_NCCL_SUM 0
#define ORDO_NCCL_PROD 1
#define ORDO_NCCL_MAX 2
#define ORDO_NCCL_MIN 3
#define ORDO_NCCL_AVG 4
typedef struct OrdoNcclComm ordo_nccl_comm;
ordo_status ordo_nccl_get_unique_id(uint8_t* id_out, size_t id_bytes_len);
ordo_status ordo_nccl_comm_init_rank(int device, size_t nranks, const uint8_t* id, size_t id_bytes_len, size_t rank, ordo_nccl_comm** out);
void ordo_nccl_comm_destroy(ordo_nccl_comm* comm);
ordo_status ordo_nccl_comm_abort(ordo_nccl_comm* comm);
ordo_status ordo_nccl_comm_borrow(void* nccl_comm, ordo_nccl_comm** out);
ordo_status ordo_nccl_comm_release(ordo_nccl_comm* comm);
ordo_status ordo_nccl_comm_wait(ordo_nccl_comm* comm, struct CUstream_st* stream, uint32_t timeout_ms);
ordo_status ordo_nccl_all_reduce(ordo_nccl_comm* comm, const void* send, void* recv, size_t count, int dtype, int op, struct CUstream_st* stream);
ordo_status ordo_nccl_broadcast(ordo_nccl_comm* comm, const void* send, void* recv, size_t count, int dtype, size_t root, struct CUstream_st* stream);
ordo_status ordo_nccl_reduce(ordo_nccl_comm* comm, const void* send, void* recv, size_t count, int dtype, int op, size_t root, struct CUstream_st* stream);
ordo_status ordo_nccl_all_gather(ordo_nccl_comm* comm, const void* send, void* recv, size_t send_count, int dtype, struct CUstream_st* stream);
ordo_status ordo_nccl_reduce_scatter(ordo_nccl_comm* comm, const void* send, void* recv, size_t recv_count, int dtype, int op, struct CUstream_st* stream);

/* ---- SM partitions (green contexts) ------------------------------------------------------------
 * A device's SMs split once into equal groups (of at least min_sms SMs, rounded up to the device's
 * granularity: multiples of 8 on compute capability 9.0) and the SMs left over; each partition
 * takes whole groups, so no two partitions share an SM. Kernels launched on a partition's stream
 * run on its SMs; the stream (ordo_sm_stream_handle) goes to every CUDA call and ordo export that
 * takes a stream. Needs a CUDA 12.4 or later driver (streams: 12.5), reached through the driver's
 * entry points; a driver without them gives cudaErrorCallRequiresNewerDriver, naming the function
 * in the last error. ordo built against CUDA headers older than 12.8 gives ORDO_ERROR_NOT_SUPPORTED.
 * split_query: what one split gives (groups, SMs a group, SMs left over), making no partition.
 * partitions_create: one split and `count` partitions, partition i taking groups[i] consecutive
 * groups; `remainder` says where the SMs left over go (ORDO_SM_REMAINDER_OWN: a partition of their
 * own, written after the others, so `out` then holds count + 1 handles). More groups than the split
 * made, or a partition with no SMs, is ORDO_ERROR_INVALID_ARGUMENT, before any is made.
 * A stream handle keeps its partition: destroy handles in any order. So does a graph that ordo
 * captures on a partition's stream (a graph cache's, when its capture_all or run captures on such a
 * stream, or when the body makes such a stream wait on an event recorded in the capture): the
 * cache's graphs replay on the partition's SMs, on any stream, after the partition and its streams
 * are destroyed. A graph the program captures itself (cudaStreamBeginCapture on
 * ordo_sm_stream_handle's stream) holds nothing: keep the partition until such a graph's last
 * launch has completed. The green context is destroyed when the last of a partition's handles,
 * streams and ordo's graphs goes, after the partition's work: that destroy waits for the device
 * (the one blocking call here). When the last is a graph, CUDA lets go of it on a thread of its
 * own, where CUDA calls are forbidden: the green context is then destroyed by the next
 * ordo_sm_partitions_create, ordo_staging_ring_create or destroy of a ring's last handle (each
 * then waits for that partition's work), or at process exit. */
#define ORDO_SM_REMAINDER_UNUSED 0
#define ORDO_SM_REMAINDER_TO_LAST 1
#define ORDO_SM_REMAINDER_OWN 2
typedef struct OrdoSmPartition ordo_sm_partition;
typedef struct OrdoSmStream ordo_sm_stream;
ordo_status ordo_sm_split_query(int device_ordinal, uint32_t min_sms, uint32_t* group_count, uint32_t* sms_per_group, uint32_t* remainder_sms);
ordo_status ordo_sm_partitions_create(int device_ordinal, uint32_t min_sms, const size_t* groups, size_t count, int remainder, ordo_sm_partition** out);
ordo_status ordo_sm_partition_sm_count(ordo_sm_partition* partition, uint32_t* sm_count);
void ordo_sm_partition_destroy(ordo_sm_partition* partition);
ordo_status ordo_sm_stream_create(ordo_sm_partition* partition, int priority, ordo_sm_stream** out);
ordo_status ordo_sm_stream_handle(ordo_sm_stream* stream, struct CUstream_st** out);
void ordo_sm_stream_destroy(ordo_sm_stream* stream);


/* ---- Memory and events shared between processes (IPC) ------------------------------------------
 * Handles cross the process boundary as ORDO_IPC_HANDLE_BYTES bytes that the program carries
 * itself (a socket, a pipe, shared memory): CUDA's 64 bytes, the allocation's size, and a tag of
 * the handle's kind, so that a handle of another kind (or other bytes) is ORDO_ERROR_INVALID_ARGUMENT.
 * A pool's descriptor crosses a connected Unix-domain socket with ordo_ipc_send_fd / ordo_ipc_recv_fd
 * (SCM_RIGHTS; an OS failure is ORDO_ERROR_LIBRARY with errno as the last error's library_status;
 * a payload_len of 0 is ORDO_ERROR_INVALID_ARGUMENT on both sides: the descriptor travels with the
 * payload's bytes).
 * What the EXPORTING process owes, none of which ordo can check across processes:
 *   - exported memory stays allocated until every importer has closed its mapping
 *     (ordo_ipc_mapping_close) or freed its import (ordo_ipc_import_free): CUDA makes a free before
 *     that undefined behaviour. ordo_ipc_import_free returns only once the free has completed, so
 *     its return is the message to send back;
 *   - an exported event stays alive until every importer has destroyed its handle of it;
 *   - a pool allocation has completed before the importer uses it (the importer's stream waits on an
 *     IPC event recorded after the allocation, or the exporter synchronised before sending);
 *   - its writes and the importer's reads are ordered with IPC events: record, send a message, wait
 *     on the other side (ordo_ipc_event_record, ordo_ipc_event_wait).
 * mem_export: cudaMalloc memory of this process (cudaIpcGetMemHandle; pool memory is refused by
 * CUDA: use an ordo_ipc_pool). mem_open: maps it on the device of `stream` (cudaIpcOpenMemHandle,
 * lazy peer access); a size beyond the mapped allocation is refused where the driver can tell. A
 * mapping's close and an import's free synchronise their stream first (the unmap is ordered on no
 * stream); `stream` stays alive until then. CUDA need not open a handle of the calling process's own
 * memory (it may fail with CUDA's error).
 * event_create: cudaEventInterprocess | cudaEventDisableTiming on the current device. event_export
 * refuses an event opened from a handle. event_query: ORDO_SUCCESS or ORDO_NOT_READY.
 * pool_create: cudaMemHandleTypePosixFileDescriptor; allocate with cudaMallocFromPoolAsync on
 * ordo_ipc_pool_handle's pool. pool_export_fd gives a new descriptor, the caller's to send and
 * close; pool_import_fd leaves `fd` the caller's and grants `device` read-write access. An imported
 * pool allocates nothing: it imports the exporter's allocations (pool_import_pointer).
 * mem_open and pool_import_pointer keep their stream past the call (the close or free is ordered on
 * it, maybe from another thread): cudaStreamPerThread, a different stream on each thread, is refused
 * there with ORDO_ERROR_INVALID_ARGUMENT. */
#define ORDO_IPC_HANDLE_BYTES 80
typedef struct OrdoIpcMapping ordo_ipc_mapping;
typedef struct OrdoIpcEvent ordo_ipc_event;
typedef struct OrdoIpcPool ordo_ipc_pool;
typedef struct OrdoIpcImport ordo_ipc_import;
ordo_status ordo_ipc_mem_export(const void* ptr, size_t bytes, uint8_t* handle_out, size_t handle_len);
ordo_status ordo_ipc_mem_open(const uint8_t* handle, size_t handle_len, struct CUstream_st* stream, ordo_ipc_mapping** out);
ordo_status ordo_ipc_mapping_get(ordo_ipc_mapping* mapping, void** ptr, size_t* bytes);
void ordo_ipc_mapping_close(ordo_ipc_mapping* mapping);
ordo_status ordo_ipc_event_create(ordo_ipc_event** out);
ordo_status ordo_ipc_event_export(ordo_ipc_event* event, uint8_t* handle_out, size_t handle_len);
ordo_status ordo_ipc_event_open(const uint8_t* handle, size_t handle_len, ordo_ipc_event** out);
ordo_status ordo_ipc_event_handle(ordo_ipc_event* event, struct CUevent_st** out);
ordo_status ordo_ipc_event_record(ordo_ipc_event* event, struct CUstream_st* stream);
ordo_status ordo_ipc_event_wait(ordo_ipc_event* event, struct CUstream_st* stream);
ordo_status ordo_ipc_event_query(ordo_ipc_event* event);
void ordo_ipc_event_destroy(ordo_ipc_event* event);
ordo_status ordo_ipc_pool_create(int device, ordo_ipc_pool** out);
ordo_status ordo_ipc_pool_export_fd(ordo_ipc_pool* pool, int* fd_out);
ordo_status ordo_ipc_pool_import_fd(int fd, int device, ordo_ipc_pool** out);
ordo_status ordo_ipc_pool_handle(ordo_ipc_pool* pool, struct CUmemPoolHandle_st** out);
ordo_status ordo_ipc_pool_export_pointer(const void* ptr, size_t bytes, uint8_t* handle_out, size_t handle_len);
ordo_status ordo_ipc_pool_import_pointer(ordo_ipc_pool* pool, const uint8_t* handle, size_t handle_len, struct CUstream_st* stream, ordo_ipc_import** out);
ordo_status ordo_ipc_import_get(ordo_ipc_import* imported, void** ptr, size_t* bytes);
void ordo_ipc_import_free(ordo_ipc_import* imported);
void ordo_ipc_pool_destroy(ordo_ipc_pool* pool);
ordo_status ordo_ipc_send_fd(int socket_fd, int fd, const uint8_t* payload, size_t payload_len);
ordo_status ordo_ipc_recv_fd(int socket_fd, uint8_t* payload, size_t payload_len, size_t* received, int* fd_out);

#ifdef __cplusplus
}
#endif

#endif /* ORDO_H */
