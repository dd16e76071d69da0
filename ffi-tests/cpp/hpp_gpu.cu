// A CUDA C++17 program against ordo.hpp on a GPU: a timer, a staging ring, a graph cache whose body
// is a lambda launching the program's own kernel, and the pipeline with a lambda compute, one that
// succeeds and one that throws (the exception comes back to the caller after ordo has joined its
// workers). Returns the number of failed checks.
#include "ordo.hpp"
#include "ordo/pdl.cuh"

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
int fails = 0;
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
__global__ void hpp_add(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += k;
}
__global__ void hpp_twice(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}
}  // namespace

// A user's kernel in two forms (plain and PDL), grid-stride: x = x * 0.5 + 1.
template <class Pdl>
__device__ __forceinline__ void hpp_step_body(float* x, int n) {
    Pdl::trigger();
    Pdl::wait();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        x[i] = fmaf(x[i], 0.5f, 1.0f);
}
ORDO_PDL_KERNELS(hpp_step, (float* x, int n), (x, n))

extern "C" int ffi_hpp_gpu_main() {
    fails = 0;
    cudaStream_t raw;
    cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking);
    ordo::stream_ref s(raw);
    try {
        // Timer: nullopt or a time, never a throw, for "not yet".
        ordo::timer t;
        t.start(s);
        t.stop(s);
        cudaStreamSynchronize(raw);
        auto ms = t.elapsed_ms();
        expect_true("timer elapsed", ms.has_value() && *ms >= 0.0f);

        // Graph cache with a lambda body: bucket 8 for n = 5, replayed twice.
        float* x = nullptr;
        cudaMalloc(&x, 64 * sizeof(float));
        cudaMemset(x, 0, 64 * sizeof(float));
        int calls = 0;
        ordo::graph_cache cache({4, 8, 16}, false, [&](ordo::stream_ref st, size_t bucket) {
            ++calls;
            hpp_add<<<1, 64, 0, st.get()>>>(x, (int)bucket, 1.0f);
        });
        size_t b1 = cache.run(s, 5);
        size_t b2 = cache.run(s, 7);
        std::vector<float> back(64);
        cudaMemcpyAsync(back.data(), x, 64 * sizeof(float), cudaMemcpyDeviceToHost, raw);
        cudaStreamSynchronize(raw);
        expect_true("graph cache buckets", b1 == 8 && b2 == 8 && calls == 1);
        expect_true("graph cache results", back[0] == 2.0f && back[7] == 2.0f && back[8] == 0.0f);

        // A body that throws: the exception comes back from run().
        ordo::graph_cache throwing({4}, false, [](ordo::stream_ref, size_t) { throw std::runtime_error("body says no"); });
        try {
            throwing.run(s, 3);
            expect_true("a throwing body's exception is rethrown", false);
        } catch (const std::runtime_error& e) {
            expect_true("the body's own exception", std::strcmp(e.what(), "body says no") == 0);
        }

        // A body that destroys its own cache (the ordo::graph_cache object) on its first call:
        // capture_all stops there with ORDO_ERROR_INVALID_HANDLE, the body is not called again, and
        // the body (owned by the cache through user_free) lives until that call has returned.
        {
            auto token = std::make_shared<int>(7);
            std::weak_ptr<int> watch = token;
            int own_calls = 0;
            bool alive_inside = false;
            ordo::graph_cache* self = nullptr;
            self = new ordo::graph_cache({1, 2, 4}, false, [&, token](ordo::stream_ref st, size_t bucket) {
                ++own_calls;
                delete self;
                self = nullptr;
                alive_inside = *token == 7 && !watch.expired();
                hpp_add<<<1, 64, 0, st.get()>>>(x, (int)bucket, 1.0f);
            });
            token.reset();
            try {
                self->capture_all(s);
                expect_true("capture_all of a cache its body destroyed throws", false);
            } catch (const ordo::error& e) {
                expect_true("destroyed during the call", e.status() == ORDO_ERROR_INVALID_HANDLE);
            }
            expect_true("the body is not called after its cache is destroyed", own_calls == 1);
            expect_true("the body outlives its own call", alive_inside);
            expect_true("the body is freed once the call has returned", watch.expired());
        }

        // Pipeline with a lambda compute.
        const size_t n = 1 << 16;
        float *h_in = nullptr, *h_out = nullptr, *d_in = nullptr, *d_out = nullptr;
        cudaMallocHost(&h_in, n * sizeof(float));
        cudaMallocHost(&h_out, n * sizeof(float));
        cudaMalloc(&d_in, n * sizeof(float));
        cudaMalloc(&d_out, n * sizeof(float));
        for (size_t i = 0; i < n; ++i) h_in[i] = (float)(i % 97) * 0.25f;
        ordo::pipeline_run(s, h_in, d_in, d_out, h_out, n, 8,
                           [](ordo::stream_ref st, const float* in, float* out, size_t count) {
                               hpp_twice<<<(unsigned)((count + 255) / 256), 256, 0, st.get()>>>(in, out, (int)count);
                           });
        cudaStreamSynchronize(raw);
        bool ok = true;
        for (size_t i = 0; i < n; ++i) ok = ok && h_out[i] == 2.0f * h_in[i] + 1.0f;
        expect_true("pipeline with a lambda", ok);
        int chunk = 0;
        try {
            ordo::pipeline_run(s, h_in, d_in, d_out, h_out, n, 8, [&](ordo::stream_ref, const float*, float*, size_t) {
                if (++chunk == 2) throw std::runtime_error("compute says no");
            });
            expect_true("a throwing compute's exception is rethrown", false);
        } catch (const std::runtime_error& e) {
            expect_true("the compute's own exception", std::strcmp(e.what(), "compute says no") == 0 && chunk == 2);
        }
        cudaStreamSynchronize(raw);

        // An ordo::pipeline of 8-byte elements (float pairs) with device temporaries from the
        // program's own pool: the lambda gets element counts and sees whole pairs.
        {
            cudaMemPoolProps props = {};
            props.allocType = cudaMemAllocationTypePinned;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = 0;
            cudaMemPool_t pool = nullptr;
            cudaMemPoolCreate(&pool, &props);
            ordo_pipeline_options o = ordo::pipeline::default_options();
            o.device = 0;
            o.element_size = 2 * sizeof(float);
            o.pool = pool;
            {
                ordo::pipeline p(o);
                std::memset(h_out, 0, n * sizeof(float));  // the earlier run's results are gone
                size_t pairs_seen = 0;
                p.run(s, h_in, nullptr, nullptr, h_out, n / 2,
                      [&](ordo::stream_ref st, const void* in, void* out, size_t pairs) {
                          pairs_seen += pairs;
                          hpp_twice<<<(unsigned)((2 * pairs + 255) / 256), 256, 0, st.get()>>>(
                              static_cast<const float*>(in), static_cast<float*>(out), (int)(2 * pairs));
                      });
                cudaStreamSynchronize(raw);
                bool same = pairs_seen == n / 2;
                for (size_t i = 0; i < n; ++i) same = same && h_out[i] == 2.0f * h_in[i] + 1.0f;
                expect_true("ordo::pipeline of float pairs from the program's pool", same);
            }
            cudaMemPoolDestroy(pool);
        }

        // The program's own kernel through ordo_launch_kernel, typed by ordo.hpp, and a chain of
        // its two PDL forms as ordo's rule plans them, at a size within one wave and one beyond.
        for (size_t m : {size_t(4096), size_t(1) << 22}) {
            float* y = nullptr;
            cudaMalloc(&y, m * sizeof(float));
            cudaMemsetAsync(y, 0, m * sizeof(float), raw);
            int dev = 0;
            cudaGetDevice(&dev);
            ordo_pdl_plan plan = ordo::pdl_plan(hpp_step, hpp_step_pdl, dev, m, 256);
            for (int k = 0; k < 10; ++k) {
                ordo_launch_config c = ordo::launch_config(plan.grid, 256);
                c.pdl = plan.use_pdl_form && k > 0;
                ordo::launch(s, plan.use_pdl_form ? hpp_step_pdl : hpp_step, c, y, (int)m);
            }
            std::vector<float> got(m);
            cudaMemcpyAsync(got.data(), y, m * sizeof(float), cudaMemcpyDeviceToHost, raw);
            cudaStreamSynchronize(raw);
            float want = 0.0f;
            for (int k = 0; k < 10; ++k) want = fmaf(want, 0.5f, 1.0f);
            bool same = true;
            for (float v : got) same = same && v == want;
            std::printf("hpp: %zu elements: PDL form %d over %u of %u blocks (one wave %u)\n", m, plan.use_pdl_form,
                        plan.grid, plan.full_blocks, plan.one_wave_blocks);
            expect_true("a PDL chain of the program's own kernel", same);
            expect_true("PDL within one wave", m != 4096 || (plan.use_pdl_form && plan.grid == plan.full_blocks));
            cudaFree(y);
        }
        cudaFreeHost(h_in);
        cudaFreeHost(h_out);
        cudaFree(d_in);
        cudaFree(d_out);
        cudaFree(x);
    } catch (const ordo::error& e) {
        std::printf("FAIL ordo::error %d: %s (%s)\n", e.status(), e.what(), e.call().c_str());
        ++fails;
    }
    cudaStreamDestroy(raw);
    return fails;
}
