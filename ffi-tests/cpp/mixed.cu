// A C++/CUDA program that owns its stream, mixes its own kernels with ordo's calls on it, and
// captures ordo's calls into its own CUDA graph. Every result is checked against the CPU.
#include "ordo.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <vector>

namespace {
int fails = 0;
void expect(const char* what, ordo_status got, ordo_status want = ORDO_SUCCESS) {
    if (got != want) {
        std::printf("FAIL %s: got %d (%s: %s), expected %d\n", what, got, ordo_status_name(got), ordo_status_string(got), want);
        ++fails;
    }
}
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
float lcg(unsigned& s) {
    s = s * 1664525u + 1013904223u;
    return (s >> 8) / 16777216.0f * 2.0f - 1.0f;
}
}  // namespace

// The program's own kernel.
__global__ void my_scale(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= k;
}

// A compute callback for ordo's pipeline: the program's kernel on ordo's chunk and stream.
static ordo_status my_compute(CUstream_st* s, const float* in, float* out, size_t n, void*) {
    cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
    my_scale<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(out, (int)n, 3.0f);
    return (ordo_status)cudaGetLastError();
}

struct CacheCtx {
    float* x;
};
static ordo_status cache_body(CUstream_st* s, size_t bucket, void* user) {
    CacheCtx* c = static_cast<CacheCtx*>(user);
    my_scale<<<(unsigned)((bucket + 255) / 256), 256, 0, s>>>(c->x, (int)bucket, 2.0f);
    return (ordo_status)cudaGetLastError();
}

static std::vector<float> gemv_normalize_cpu(const std::vector<float>& a, const std::vector<float>& x, size_t rows, size_t cols, float k) {
    std::vector<double> y(rows);
    double norm = 0;
    for (size_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (size_t c = 0; c < cols; ++c) acc += (double)a[r * cols + c] * x[c] * k;
        y[r] = acc;
        norm += acc * acc;
    }
    std::vector<float> out(rows);
    for (size_t r = 0; r < rows; ++r) out[r] = (float)(y[r] / std::sqrt(norm));
    return out;
}

extern "C" int ffi_mixed_main() {
    fails = 0;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    const size_t rows = 300, cols = 200;
    unsigned seed = 7;
    std::vector<float> a(rows * cols), x(cols);
    for (auto& v : a) v = lcg(seed);
    for (auto& v : x) v = lcg(seed);
    float *da, *dx, *dy;
    cudaMalloc(&da, a.size() * 4);
    cudaMalloc(&dx, x.size() * 4);
    cudaMalloc(&dy, rows * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    std::vector<float> expect_y = gemv_normalize_cpu(a, x, rows, cols, 1.5f);

    // 1. Own kernel, then ordo, on the program's stream; no synchronise until the end.
    my_scale<<<1, 256, 0, s>>>(dx, (int)cols, 1.5f);
    expect("gemv_normalize eager", ordo_gemv_normalize(s, da, dx, dy, rows, cols));
    std::vector<float> y(rows);
    cudaMemcpyAsync(y.data(), dy, rows * 4, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    for (size_t i = 0; i < rows; ++i)
        if (std::fabs(y[i] - expect_y[i]) > 1e-3f * std::fmax(std::fabs(expect_y[i]), 1e-3f)) {
            expect_true("gemv_normalize eager result", false);
            break;
        }

    // 2. ordo calls captured into the program's own graph (global mode: a hidden synchronise fails it).
    const size_t n = 4096;
    std::vector<float> c0(n), sc(n);
    for (size_t i = 0; i < n; ++i) {
        c0[i] = lcg(seed);
        sc[i] = 0.5f + 0.25f * (lcg(seed) + 1.0f);
    }
    float *ca, *cb, *cs, *dy2;
    cudaMalloc(&ca, n * 4);
    cudaMalloc(&cb, n * 4);
    cudaMalloc(&cs, n * 4);
    cudaMalloc(&dy2, rows * 4);
    cudaMemcpy(ca, c0.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(cs, sc.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaGraph_t g = nullptr;
    expect("begin capture", (ordo_status)cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    my_scale<<<1, 256, 0, s>>>(dx, (int)cols, 1.5f);
    expect("gemv_normalize captured", ordo_gemv_normalize(s, da, dx, dy2, rows, cols));
    expect("pdl chain captured", ordo_pdl_chain(s, ca, cb, cs, n, 10, 1));
    expect("end capture", (ordo_status)cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge = nullptr;
    expect("instantiate", (ordo_status)cudaGraphInstantiate(&ge, g, 0));
    expect("graph launch", (ordo_status)cudaGraphLaunch(ge, s));
    std::vector<float> y2(rows), chain(n);
    cudaMemcpyAsync(y2.data(), dy2, rows * 4, cudaMemcpyDeviceToHost, s);
    cudaMemcpyAsync(chain.data(), ca, n * 4, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    for (size_t i = 0; i < rows; ++i)
        if (std::fabs(y2[i] - expect_y[i]) > 1e-3f * std::fmax(std::fabs(expect_y[i]), 1e-3f)) {
            expect_true("gemv_normalize in the program's graph", false);
            break;
        }
    for (size_t i = 0; i < n; ++i) {
        float v = c0[i];
        for (int k = 0; k < 10; ++k) v = std::fma(v, sc[i], 1.0f);
        if (chain[i] != v) {
            expect_true("pdl chain in the program's graph", false);
            break;
        }
    }

    // 3. The pipeline with the program's compute callback; pageable memory is refused.
    const size_t pn = 1 << 20;
    float *hin, *hout, *din, *dout;
    cudaHostAlloc((void**)&hin, pn * 4, 0);
    cudaHostAlloc((void**)&hout, pn * 4, 0);
    cudaMalloc(&din, pn * 4);
    cudaMalloc(&dout, pn * 4);
    for (size_t i = 0; i < pn; ++i) hin[i] = lcg(seed);
    expect("pipeline", ordo_pipeline_run(s, hin, din, dout, hout, pn, 16, my_compute, nullptr));
    cudaStreamSynchronize(s);
    bool ok = true;
    for (size_t i = 0; i < pn && ok; ++i) ok = hout[i] == hin[i] * 3.0f;
    expect_true("pipeline result", ok);
    std::vector<float> pageable(pn);
    expect("pipeline from pageable", ordo_pipeline_run(s, pageable.data(), din, dout, hout, pn, 16, nullptr, nullptr), ORDO_ERROR_PAGEABLE_MEMORY);
    expect("pipeline device as host", ordo_pipeline_run(s, din, din, dout, hout, pn, 16, nullptr, nullptr), ORDO_ERROR_PAGEABLE_MEMORY);

    // 4. The graph bucket cache with the program's capture callback.
    float* bx;
    cudaMalloc(&bx, 256 * 4);
    std::vector<float> ones(256, 1.0f);
    cudaMemcpy(bx, ones.data(), 256 * 4, cudaMemcpyHostToDevice);
    CacheCtx ctx{bx};
    ordo_graph_cache* cache = nullptr;
    expect("cache create", ordo_graph_cache_create(nullptr, 0, 0, cache_body, &ctx, &cache));
    size_t bucket = 0;
    expect("cache run 3", ordo_graph_cache_run(cache, s, 3, &bucket));
    expect_true("bucket of 3 is 4", bucket == 4);
    expect("cache run 300", ordo_graph_cache_run(cache, s, 300, &bucket), ORDO_ERROR_INVALID_ARGUMENT);
    std::vector<float> back(256);
    cudaMemcpyAsync(back.data(), bx, 256 * 4, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    expect_true("cache result", back[0] == 2.0f && back[3] == 2.0f && back[4] == 1.0f);
    ordo_graph_cache_destroy(cache);

    // 5. The staging ring and the timer.
    ordo_staging_ring* ring = nullptr;
    expect("ring create", ordo_staging_ring_create(2, 4096, &ring));
    float* ddst;
    cudaMalloc(&ddst, 8 * 1024);
    ordo_timer* timer = nullptr;
    expect("timer create", ordo_timer_create(&timer));
    expect("timer start", ordo_timer_start(timer, s));
    for (int k = 0; k < 2; ++k) {
        void* slot = nullptr;
        size_t ticket = 0;
        expect("ring acquire", ordo_staging_ring_acquire(ring, 1, &slot, &ticket));
        float* f = static_cast<float*>(slot);
        for (int i = 0; i < 1024; ++i) f[i] = (float)(k * 1024 + i);
        expect("ring submit", ordo_staging_ring_submit(ring, ticket, 4096, ddst + k * 1024, s));
    }
    expect("ring submit bad ticket", ordo_staging_ring_submit(ring, 9999, 4096, ddst, s), ORDO_ERROR_INVALID_TICKET);
    expect("timer stop", ordo_timer_stop(timer, s));
    cudaStreamSynchronize(s);
    std::vector<float> staged(2048);
    cudaMemcpy(staged.data(), ddst, 8192, cudaMemcpyDeviceToHost);
    ok = true;
    for (int i = 0; i < 2048 && ok; ++i) ok = staged[i] == (float)i;
    expect_true("staging ring result", ok);
    float ms = -1;
    expect("timer elapsed", ordo_timer_elapsed_ms(timer, &ms));
    expect_true("timer value", ms >= 0.0f);
    ordo_timer_destroy(timer);
    ordo_staging_ring_destroy(ring);

    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaFree(da); cudaFree(dx); cudaFree(dy); cudaFree(dy2); cudaFree(ca); cudaFree(cb); cudaFree(cs);
    cudaFree(din); cudaFree(dout); cudaFree(bx); cudaFree(ddst);
    cudaFreeHost(hin); cudaFreeHost(hout);
    cudaStreamDestroy(s);
    std::printf("mixed C++ program: %d failed checks\n", fails);
    return fails;
}
