// A C++/CUDA program that captures ordo's calls into its own graphs in every capture mode, replays
// them, makes ordo's calls fail part-way, and uses stale and wrong-kind handles: each case gives the
// status ordo.h documents, every capture stays valid, and every result is checked against the CPU.
#include "ordo.h"
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

namespace {
int fails = 0;
void expect(const char* what, int got, int want = ORDO_SUCCESS) {
    if (got != want) {
        std::printf("FAIL %s: got %d (%s: %s), expected %d (%s)\n", what, got, ordo_status_name(got), ordo_status_string(got), want,
                    ordo_status_name(want));
        ++fails;
    }
}
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
const char* mode_name(cudaStreamCaptureMode m) {
    return m == cudaStreamCaptureModeGlobal ? "global" : m == cudaStreamCaptureModeThreadLocal ? "thread-local" : "relaxed";
}
bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusActive;
}
// ordo's 64-step kernel, on the CPU.
float heavy(float v) {
    for (int k = 0; k < 64; ++k) v = std::fma(v, 0.999f, 0.001f);
    return v;
}
bool near(float a, float b) { return std::fabs(a - b) <= 1e-5f * std::fmax(1.0f, std::fabs(b)); }
}  // namespace

__global__ void triple(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 3.0f;
}

__global__ void add_k(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += k;
}

// The program's compute callback: triples the chunk. `user` counts calls; when it points to a
// negative count, the call with that index (counted from -1 down) fails.
struct Calls {
    std::atomic<int> count{0};
    int fail_at = -1;  // the call index that fails, -1: none
};
static ordo_status triple_compute(CUstream_st* s, const float* in, float* out, size_t n, void* user) {
    Calls* c = static_cast<Calls*>(user);
    int call = c->count.fetch_add(1);
    if (call == c->fail_at) return cudaErrorInvalidValue;
    triple<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(in, out, (int)n);
    return (ordo_status)cudaGetLastError();
}

struct CacheCtx {
    float* x;
    ordo_graph_cache* self;
    ordo_status reentry = -1;
};
static ordo_status add_body(CUstream_st* s, size_t bucket, void* user) {
    CacheCtx* c = static_cast<CacheCtx*>(user);
    if (c->self) c->reentry = ordo_graph_cache_run(c->self, s, 1, nullptr);
    add_k<<<(unsigned)((bucket + 255) / 256), 256, 0, s>>>(c->x, (int)bucket, 1.0f);
    return (ordo_status)cudaGetLastError();
}

static void pipeline_in_captures(cudaStream_t s) {
    const size_t n = 1 << 16;
    float *hin, *hout, *din, *dout;
    cudaHostAlloc((void**)&hin, n * 4, 0);
    cudaHostAlloc((void**)&hout, n * 4, 0);
    cudaMalloc(&din, n * 4);
    cudaMalloc(&dout, n * 4);
    cudaStreamCaptureMode modes[3] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed};
    for (cudaStreamCaptureMode m : modes) {
        for (int with_callback = 0; with_callback < 2; ++with_callback) {
            char what[128];
            std::snprintf(what, sizeof what, "pipeline in a %s capture, %s", mode_name(m), with_callback ? "callback" : "ordo's kernel");
            Calls calls;
            cudaGraph_t g = nullptr;
            expect("begin capture", cudaStreamBeginCapture(s, m));
            expect(what, ordo_pipeline_run(s, hin, din, dout, hout, n, 8, with_callback ? triple_compute : nullptr, &calls));
            expect_true("the capture is still active after the pipeline", capturing(s));
            expect("end capture after the pipeline", cudaStreamEndCapture(s, &g));
            cudaGraphExec_t ge = nullptr;
            expect("instantiate the pipeline's graph", cudaGraphInstantiate(&ge, g, 0));
            expect_true("callback called once a chunk at capture", !with_callback || calls.count == 8);
            for (int replay = 0; replay < 3; ++replay) {
                for (size_t i = 0; i < n; ++i) hin[i] = 0.001f * (float)((i * 7 + replay * 13) % 1000);
                std::memset(hout, 0, n * 4);
                expect("replay the pipeline", cudaGraphLaunch(ge, s));
                expect("synchronize", cudaStreamSynchronize(s));
                bool ok = true;
                for (size_t i = 0; i < n && ok; ++i) ok = near(hout[i], with_callback ? hin[i] * 3.0f : heavy(hin[i]));
                expect_true("pipeline replay result", ok);
            }
            cudaGraphExecDestroy(ge);
            cudaGraphDestroy(g);
        }
    }
    cudaFree(din);
    cudaFree(dout);
    cudaFreeHost(hin);
    cudaFreeHost(hout);
}

static void pipeline_failure(cudaStream_t s) {
    const size_t n = 1 << 20;
    float *hin, *hout, *din, *dout;
    cudaHostAlloc((void**)&hin, n * 4, 0);
    cudaHostAlloc((void**)&hout, n * 4, 0);
    cudaMalloc(&din, n * 4);
    cudaMalloc(&dout, n * 4);
    for (size_t i = 0; i < n; ++i) {
        hin[i] = (float)(i % 1000);
        hout[i] = -1.0f;
    }
    // Fails on chunk 1 of 16: the callback's status comes back unchanged, and once the caller's
    // stream is synchronised ordo writes nothing more into host_out.
    Calls calls;
    calls.fail_at = 1;
    expect("pipeline failing on chunk 1", ordo_pipeline_run(s, hin, din, dout, hout, n, 16, triple_compute, &calls), cudaErrorInvalidValue);
    expect_true("no chunk after the failing one was enqueued", calls.count == 2);
    expect("synchronize after the failure", cudaStreamSynchronize(s));
    std::vector<float> snapshot(hout, hout + n);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    expect_true("host output no longer changes after the caller's synchronize", std::memcmp(snapshot.data(), hout, n * 4) == 0);
    bool first_chunk = true, rest_untouched = true;
    for (size_t i = 0; i < n / 16; ++i) first_chunk = first_chunk && hout[i] == hin[i] * 3.0f;
    for (size_t i = n / 8; i < n; ++i) rest_untouched = rest_untouched && hout[i] == -1.0f;
    expect_true("chunk 0 was copied out", first_chunk);
    expect_true("chunks after the failure were not", rest_untouched);

    // The same failure inside a capture: the status, and the capture still valid (ordo's streams
    // joined back: no cudaErrorStreamCaptureUnjoined at its end).
    calls.count = 0;
    cudaGraph_t g = nullptr;
    expect("begin capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    expect("pipeline failing inside a capture", ordo_pipeline_run(s, hin, din, dout, hout, n, 16, triple_compute, &calls), cudaErrorInvalidValue);
    expect_true("the capture is still active after the failure", capturing(s));
    expect("end capture after a failed pipeline", cudaStreamEndCapture(s, &g));
    if (g) cudaGraphDestroy(g);
    cudaFree(din);
    cudaFree(dout);
    cudaFreeHost(hin);
    cudaFreeHost(hout);
}

static void staging_ring_replays(cudaStream_t s) {
    ordo_staging_ring* ring = nullptr;
    expect("ring create", ordo_staging_ring_create(2, 4096, &ring));
    float* ddst;
    cudaMalloc(&ddst, 4096);
    void* slot = nullptr;
    size_t ticket = 0;
    expect("ring acquire", ordo_staging_ring_acquire(ring, 0, &slot, &ticket));
    float* f = static_cast<float*>(slot);
    for (int i = 0; i < 1024; ++i) f[i] = 0.5f * (float)i;
    cudaGraph_t g = nullptr;
    expect("begin capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    expect("ring submit captured", ordo_staging_ring_submit(ring, ticket, 4096, ddst, s));
    expect_true("the capture is still active after the submit", capturing(s));
    expect("end capture after the submit", cudaStreamEndCapture(s, &g));
    expect("ticket used up by the captured submit", ordo_staging_ring_submit(ring, ticket, 4096, ddst, s), ORDO_ERROR_INVALID_TICKET);
    cudaGraphExec_t ge = nullptr;
    expect("instantiate the submit's graph", cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> back(1024);
    for (int replay = 0; replay < 5; ++replay) {
        cudaMemsetAsync(ddst, 0, 4096, s);
        expect("replay the submit", cudaGraphLaunch(ge, s));
        cudaMemcpyAsync(back.data(), ddst, 4096, cudaMemcpyDeviceToHost, s);
        expect("synchronize", cudaStreamSynchronize(s));
        bool ok = true;
        for (int i = 0; i < 1024 && ok; ++i) ok = back[i] == 0.5f * (float)i;
        expect_true("staging replay result", ok);
    }
    // The graph holds its slot; the other one is still free.
    void* other = nullptr;
    size_t other_ticket = 0;
    expect("the second slot", ordo_staging_ring_acquire(ring, 0, &other, &other_ticket));
    expect_true("a different slot", other != slot);
    void* none = nullptr;
    size_t none_ticket = 0;
    expect("no third slot", ordo_staging_ring_acquire(ring, 0, &none, &none_ticket), cudaErrorNotReady);
    expect("wait with every slot held by a ticket or the graph", ordo_staging_ring_acquire(ring, 1, &none, &none_ticket), cudaErrorNotReady);
    // A ticket given back without a copy frees its slot; it is then used up.
    expect("release the second slot's ticket", ordo_staging_ring_release(ring, other_ticket));
    expect("released twice", ordo_staging_ring_release(ring, other_ticket), ORDO_ERROR_INVALID_TICKET);
    expect("the released slot again", ordo_staging_ring_acquire(ring, 0, &none, &none_ticket));
    expect_true("the same slot under a new ticket", none == other && none_ticket != other_ticket);
    expect("the stale ticket cannot submit into it", ordo_staging_ring_submit(ring, other_ticket, 4096, ddst, s), ORDO_ERROR_INVALID_TICKET);
    // Destroying the ring while the graph holds a slot is safe; the graph still replays.
    ordo_staging_ring* stale = ring;
    ordo_staging_ring_destroy(ring);
    expect("stale ring acquire", ordo_staging_ring_acquire(stale, 0, &none, &none_ticket), ORDO_ERROR_INVALID_HANDLE);
    cudaMemsetAsync(ddst, 0, 4096, s);
    expect("replay after the ring's destroy", cudaGraphLaunch(ge, s));
    cudaMemcpyAsync(back.data(), ddst, 4096, cudaMemcpyDeviceToHost, s);
    expect("synchronize", cudaStreamSynchronize(s));
    expect_true("replay after the ring's destroy result", back[1023] == 0.5f * 1023.0f);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaFree(ddst);
}

static void cache_in_captures(cudaStream_t s) {
    float* x;
    cudaMalloc(&x, 256 * 4);
    cudaMemset(x, 0, 256 * 4);
    CacheCtx ctx{x, nullptr};
    ordo_graph_cache* cache = nullptr;
    expect("cache create", ordo_graph_cache_create(nullptr, 0, 0, add_body, &ctx, &cache));
    cudaGraph_t g = nullptr;
    expect("begin capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    expect("capture_all inside a capture", ordo_graph_cache_capture_all(cache, s), ORDO_ERROR_STREAM_CAPTURING);
    size_t bucket = 0;
    expect("cache run inside a capture", ordo_graph_cache_run(cache, s, 3, &bucket));
    expect_true("bucket of 3 inside a capture", bucket == 4);
    expect_true("the capture is still active after the cache", capturing(s));
    expect("end capture after the cache", cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge = nullptr;
    expect("instantiate", cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 3; ++i) expect("replay", cudaGraphLaunch(ge, s));
    std::vector<float> back(256);
    cudaMemcpyAsync(back.data(), x, 256 * 4, cudaMemcpyDeviceToHost, s);
    expect("synchronize", cudaStreamSynchronize(s));
    expect_true("cache body captured into the caller's graph, replayed 3 times", back[0] == 3.0f && back[3] == 3.0f && back[4] == 0.0f);
    // A body that calls back into its own cache gets ORDO_ERROR_HANDLE_BUSY, and no deadlock.
    ctx.self = cache;
    expect("cache run with a re-entering body", ordo_graph_cache_run(cache, s, 20, &bucket));
    expect("the re-entry's status", ctx.reentry, ORDO_ERROR_HANDLE_BUSY);
    ctx.self = nullptr;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    ordo_graph_cache_destroy(cache);
    expect("stale cache", ordo_graph_cache_run(cache, s, 3, &bucket), ORDO_ERROR_INVALID_HANDLE);
    expect("synchronize", cudaStreamSynchronize(s));
    cudaFree(x);
}

// Another thread holds a global-mode capture open while this one enqueues work through ordo on
// handles made before that capture began, destroyed after it ended: what global mode allows other
// threads (ordo.h, CAPTURES: no capture-unsafe call meanwhile, which crashes the driver: ordo's
// docs/cuda-behaviours.md, CB-02). ordo's own queries on the way neither fail nor invalidate that capture, and the work is
// right.
static void another_threads_global_capture(cudaStream_t s) {
    cudaStream_t other;
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    float* x;
    cudaMalloc(&x, 256 * 4);
    cudaMemset(x, 0, 256 * 4);  // the cache's body reads it
    unsigned char* dst;
    cudaMalloc(&dst, 256);
    ordo_staging_ring* ring = nullptr;
    expect("ring create", ordo_staging_ring_create(2, 256, &ring));
    CacheCtx ctx{x, nullptr};
    ordo_graph_cache* cache = nullptr;
    expect("cache create", ordo_graph_cache_create(nullptr, 0, 0, add_body, &ctx, &cache));
    expect("cache capture_all before the other thread's global capture", ordo_graph_cache_capture_all(cache, s));
    ordo_timer* timer = nullptr;
    expect("timer create", ordo_timer_create(&timer));
    void* slot = nullptr;
    size_t ticket = 0;
    expect("ring acquire", ordo_staging_ring_acquire(ring, 0, &slot, &ticket));
    std::memset(slot, 0x5a, 256);
    std::atomic<int> phase{0};
    cudaError_t end_status = cudaErrorUnknown;
    std::thread t([&] {
        cudaStreamBeginCapture(other, cudaStreamCaptureModeGlobal);
        add_k<<<1, 256, 0, other>>>(x, 256, 1.0f);
        phase = 1;
        while (phase != 2) std::this_thread::yield();
        cudaGraph_t g = nullptr;
        end_status = cudaStreamEndCapture(other, &g);
        if (g) cudaGraphDestroy(g);
    });
    while (phase != 1) std::this_thread::yield();
    expect("timer start under another thread's global capture", ordo_timer_start(timer, s));
    expect("cache run under another thread's global capture", ordo_graph_cache_run(cache, s, 8, nullptr));
    expect("ring submit under another thread's global capture", ordo_staging_ring_submit(ring, ticket, 256, dst, s));
    expect("timer stop under another thread's global capture", ordo_timer_stop(timer, s));
    phase = 2;
    t.join();
    expect("the other thread's capture ended cleanly", end_status);
    expect("synchronize", cudaStreamSynchronize(s));
    float back[256];
    unsigned char staged[256];
    cudaMemcpy(back, x, sizeof back, cudaMemcpyDeviceToHost);
    cudaMemcpy(staged, dst, sizeof staged, cudaMemcpyDeviceToHost);
    bool cache_ok = true;
    for (int i = 0; i < 256; ++i) cache_ok = cache_ok && back[i] == (i < 8 ? 1.0f : 0.0f);
    expect_true("the cache's replay under the other capture", cache_ok);
    bool ring_ok = true;
    for (int i = 0; i < 256; ++i) ring_ok = ring_ok && staged[i] == 0x5a;
    expect_true("the ring's copy under the other capture", ring_ok);
    ordo_timer_destroy(timer);
    ordo_graph_cache_destroy(cache);
    ordo_staging_ring_destroy(ring);
    cudaFree(dst);
    cudaFree(x);
    cudaStreamDestroy(other);
}

extern "C" int ffi_captures_main() {
    fails = 0;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    pipeline_in_captures(s);
    pipeline_failure(s);
    staging_ring_replays(s);
    cache_in_captures(s);
    another_threads_global_capture(s);
    expect("no error left", cudaDeviceSynchronize());
    cudaStreamDestroy(s);
    std::printf("captures C++ program: %d failed checks\n", fails);
    return fails;
}
