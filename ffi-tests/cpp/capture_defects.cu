// Plain CUDA C++, no ordo: the CUDA behaviours that ordo's capture rules rest on (ordo.h,
// CAPTURES; ordo_cuda_core::graph::CaptureMode::Global; StreamRef::legacy_default). Each scenario
// runs threads for a while and counts iterations; a scenario that crashes the driver kills the
// process, so the tests run each one in a child process (ffi-tests/tests/capture_modes.rs) and
// report what happened.
//
// What the scenarios showed is in ordo's docs/cuda-behaviours.md: CB-01 (scenario 0), CB-02 (3, 6,
// 9) and CB-03 (4, 5, 8); 1, 2 and 7 are the controls, which run clean.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

__global__ void defect_scale(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * k + 1.0f;
}

__global__ void defect_sum_into(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

using Clock = std::chrono::steady_clock;

struct Counts {
    std::atomic<long> iterations{0};
    std::atomic<long> refusals{0};  // CUDA errors returned (the documented behaviour), not crashes
    std::atomic<long> failures{0};  // errors where none may occur (the control scenarios)
};

// One thread's loop: capture (two kernels, a stream-ordered temporary), instantiate, launch,
// synchronise, destroy, until `end`. `errors_allowed`: global mode, where CUDA documents refusals.
// `blocking`: on a blocking stream (cudaStreamDefault), which synchronises with the legacy stream.
void capture_loop(cudaStreamCaptureMode mode, Clock::time_point end, bool errors_allowed, Counts& counts,
                  bool blocking = false) {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, blocking ? cudaStreamDefault : cudaStreamNonBlocking) != cudaSuccess) {
        ++counts.failures;
        return;
    }
    float* x = nullptr;
    cudaMallocAsync(reinterpret_cast<void**>(&x), 1024 * sizeof(float), s);
    cudaMemsetAsync(x, 0, 1024 * sizeof(float), s);
    cudaStreamSynchronize(s);
    while (Clock::now() < end) {
        cudaGraph_t g = nullptr;
        cudaGraphExec_t e = nullptr;
        cudaError_t st = cudaStreamBeginCapture(s, mode);
        if (st == cudaSuccess) {
            float* tmp = nullptr;
            cudaMallocAsync(reinterpret_cast<void**>(&tmp), sizeof(float), s);
            cudaMemsetAsync(tmp, 0, sizeof(float), s);
            defect_scale<<<4, 256, 0, s>>>(x, 1024, 0.5f);
            defect_sum_into<<<4, 256, 0, s>>>(x, tmp, 1024);
            cudaFreeAsync(tmp, s);
            st = cudaStreamEndCapture(s, &g);
        }
        if (st == cudaSuccess) st = cudaGraphInstantiateWithFlags(&e, g, 0);
        if (st == cudaSuccess) st = cudaGraphLaunch(e, s);
        cudaError_t synced = cudaStreamSynchronize(s);
        if (st == cudaSuccess) st = synced;
        if (e) cudaGraphExecDestroy(e);
        if (g) cudaGraphDestroy(g);
        if (st != cudaSuccess) {
            cudaGetLastError();
            ++(errors_allowed ? counts.refusals : counts.failures);
        }
        ++counts.iterations;
    }
    cudaFreeAsync(x, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
}

// Eager work synchronised on a stream of its own, until `end`; with `relaxed`, the thread's capture
// mode exchanged to relaxed first (as ordo's C exports run their own CUDA calls).
void sync_loop(Clock::time_point end, bool relaxed, Counts& counts) {
    if (relaxed) {
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
    }
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
    float* x = nullptr;
    cudaMallocAsync(reinterpret_cast<void**>(&x), 1024 * sizeof(float), s);
    cudaMemsetAsync(x, 0, 1024 * sizeof(float), s);
    while (Clock::now() < end) {
        defect_scale<<<4, 256, 0, s>>>(x, 1024, 0.5f);
        if (cudaStreamSynchronize(s) != cudaSuccess) {
            cudaGetLastError();
            ++counts.refusals;
        }
        ++counts.iterations;
    }
    cudaFreeAsync(x, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
}

// Eager work on a stream of its own, polled with cudaStreamQuery and an event's cudaEventQuery
// until done (never synchronised), until `end`: whether queries alone meet the global-mode crash.
void query_loop(Clock::time_point end, Counts& counts) {
    cudaStream_t s;
    cudaEvent_t e;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return;
    float* x = nullptr;
    cudaMallocAsync(reinterpret_cast<void**>(&x), 1024 * sizeof(float), s);
    cudaMemsetAsync(x, 0, 1024 * sizeof(float), s);
    while (Clock::now() < end) {
        defect_scale<<<4, 256, 0, s>>>(x, 1024, 0.5f);
        cudaEventRecord(e, s);
        cudaError_t st;
        for (;;) {
            st = cudaStreamQuery(s);
            if (st == cudaSuccess) st = cudaEventQuery(e);
            if (st != cudaErrorNotReady) break;
        }
        if (st != cudaSuccess) {
            cudaGetLastError();
            ++counts.refusals;
            if (Clock::now() >= end) break;
        }
        ++counts.iterations;
    }
    cudaFreeAsync(x, s);
    while (cudaStreamQuery(s) == cudaErrorNotReady) {
    }
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
}

// Begin and end relaxed-mode captures on a blocking stream of its own, until `end`.
void blocking_capture_loop(Clock::time_point end, Counts& counts) {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamDefault) != cudaSuccess) return;
    while (Clock::now() < end) {
        cudaGraph_t g = nullptr;
        if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
            if (cudaStreamEndCapture(s, &g) != cudaSuccess) ++counts.refusals;
        } else {
            ++counts.refusals;
        }
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        ++counts.iterations;
    }
    cudaStreamDestroy(s);
}

// The calls ordo's safe Rust API makes outside any stream, which CUDA counts as potentially unsafe
// during a capture (they may synchronise the device implicitly), until `end`: managed memory
// allocated and freed (ManagedBuffer), pinned memory allocated and freed (PinnedBuffer, a staging
// ring), host memory registered and unregistered (RegisteredHost), device memory allocated and
// freed outside streams, an event and a stream made and destroyed. Any refusal is a failure: CUDA
// documents none from a thread that does not capture, beside thread-local captures.
void implicit_sync_loop(Clock::time_point end, Counts& counts) {
    std::vector<float> pageable(1 << 16, 1.0f);
    while (Clock::now() < end) {
        void* managed = nullptr;
        void* pinned = nullptr;
        void* device = nullptr;
        cudaEvent_t e = nullptr;
        cudaStream_t s = nullptr;
        bool ok = cudaMallocManaged(&managed, 1 << 20) == cudaSuccess && cudaFree(managed) == cudaSuccess;
        ok = ok && cudaMallocHost(&pinned, 1 << 20) == cudaSuccess && cudaFreeHost(pinned) == cudaSuccess;
        ok = ok && cudaHostRegister(pageable.data(), pageable.size() * sizeof(float), 0) == cudaSuccess &&
             cudaHostUnregister(pageable.data()) == cudaSuccess;
        ok = ok && cudaMalloc(&device, 1 << 20) == cudaSuccess && cudaFree(device) == cudaSuccess;
        ok = ok && cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
             cudaEventDestroy(e) == cudaSuccess;
        ok = ok && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
             cudaStreamDestroy(s) == cudaSuccess;
        if (!ok) {
            cudaGetLastError();
            ++counts.failures;
        }
        ++counts.iterations;
    }
}

// A 128 MiB device-to-host copy into pinned memory on the legacy stream, then its synchronise
// (what ordo's blocking copy on StreamRef::legacy_default() does), until `end`; with `copy` 0,
// the synchronise alone.
void legacy_loop(Clock::time_point end, bool copy, Counts& counts) {
    const size_t bytes = size_t(128) << 20;
    void* d = nullptr;
    void* h = nullptr;
    if (copy && (cudaMalloc(&d, bytes) != cudaSuccess || cudaMallocHost(&h, bytes) != cudaSuccess)) return;
    while (Clock::now() < end) {
        cudaError_t st = cudaSuccess;
        if (copy) st = cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy);
        cudaError_t synced = cudaStreamSynchronize(cudaStreamLegacy);
        if (st != cudaSuccess || synced != cudaSuccess) {
            cudaGetLastError();
            ++counts.refusals;
        }
        ++counts.iterations;
    }
    if (copy) {
        cudaFree(d);
        cudaFreeHost(h);
    }
}

}  // namespace

// Runs `scenario` on `threads` threads for `seconds` seconds and prints what it counted. Returns
// the number of failures (errors in a control scenario), 0 when clean; a driver crash ends the
// process instead.
//   0: every thread captures in cudaStreamCaptureModeGlobal (capture, instantiate, launch,
//      synchronise, destroy, in a loop);
//   1: the same in cudaStreamCaptureModeThreadLocal (control);
//   2: the same in cudaStreamCaptureModeRelaxed (control);
//   3: one thread captures in global mode while the others launch and synchronise their own
//      streams;
//   4: one thread copies 128 MiB device-to-host on the legacy stream and synchronises it, another
//      begins and ends relaxed-mode captures on its own blocking stream;
//   5: as 4, the legacy thread synchronising the legacy stream only (no copy);
//   6: as 3, the synchronising threads in relaxed capture mode (cudaThreadExchangeStreamCaptureMode),
//      as ordo's C exports make their own calls: whether that keeps them out of the crash;
//   7: one thread captures in thread-local mode (ordo's default) on a blocking stream while the
//      others make the implicitly synchronising calls of ordo's safe API (implicit_sync_loop);
//      a control: any error, or a crash, is a failure;
//   8: as 4, the captures in thread-local mode (ordo's default) with kernels in them: whether
//      the legacy stream's crash needs relaxed mode;
//   9: as 3, the other threads polling their streams and events with queries, never
//      synchronising: whether queries meet the global-mode crash too.
extern "C" int ffi_capture_defect_main(int scenario, int threads, int seconds) {
    if (threads < 2) threads = 2;
    Counts counts;
    const Clock::time_point end = Clock::now() + std::chrono::seconds(seconds);
    cudaFree(nullptr);  // the context, before the threads start
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            switch (scenario) {
                case 0: capture_loop(cudaStreamCaptureModeGlobal, end, true, counts); break;
                case 1: capture_loop(cudaStreamCaptureModeThreadLocal, end, false, counts); break;
                case 2: capture_loop(cudaStreamCaptureModeRelaxed, end, false, counts); break;
                case 3:
                case 6:
                    if (t == 0) capture_loop(cudaStreamCaptureModeGlobal, end, true, counts);
                    else sync_loop(end, scenario == 6, counts);
                    break;
                case 4:
                case 5:
                    if (t == 0) legacy_loop(end, scenario == 4, counts);
                    else if (t == 1) blocking_capture_loop(end, counts);
                    break;
                case 7:
                    if (t == 0) capture_loop(cudaStreamCaptureModeThreadLocal, end, false, counts, true);
                    else implicit_sync_loop(end, counts);
                    break;
                case 9:
                    if (t == 0) capture_loop(cudaStreamCaptureModeGlobal, end, true, counts);
                    else query_loop(end, counts);
                    break;
                case 8:
                    if (t == 0) legacy_loop(end, true, counts);
                    else if (t == 1) capture_loop(cudaStreamCaptureModeThreadLocal, end, true, counts, true);
                    break;
                default: break;
            }
        });
    }
    for (auto& th : pool) th.join();
    std::printf("capture defect scenario %d, %d threads, %d s: %ld iterations, %ld CUDA errors, %ld failures\n",
                scenario, threads, seconds, counts.iterations.load(), counts.refusals.load(), counts.failures.load());
    std::fflush(stdout);
    return static_cast<int>(counts.failures.load());
}
