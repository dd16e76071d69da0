// Plain CUDA C++ baseline of SM partitions (green contexts), for ordo-bench's group `green`: the
// same split, streams, graph and hog as ordo's side, through the driver's entry points
// (cudaGetDriverEntryPointByVersion: no libcuda link), the measuring loop in C++.
//
// A decode-like graph (a chain of 100 small dependent kernels, 4096 elements, 16 blocks) is
// replayed on one stream while, or while not, a compute hog (a kernel whose blocks fill every SM
// it may use, spinning `hog_ns`) runs on another: both on plain streams, or the chain on a
// partition of one group of SMs and the hog on the partition of every other SM.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {

// One chain step: x[i] = x[i] * 0.999 + 1.
__global__ void bl_green_step(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaf(x[i], 0.999f, 1.0f);
}

// Every thread spins `ns` nanoseconds of %globaltimer: a grid of 8 blocks of 256 threads an SM
// fills the SMs it runs on for that long.
__global__ void bl_green_hog(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

}  // extern "C"

namespace {

template <class F>
bool entry(const char* name, unsigned version, F* out) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
    if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess || !p) {
        cudaGetLastError();
        return false;
    }
    *out = reinterpret_cast<F>(p);
    return true;
}

struct Driver {
    decltype(&cuDeviceGetDevResource) get_resource;
    decltype(&cuDevSmResourceSplitByCount) split;
    decltype(&cuDevResourceGenerateDesc) desc;
    decltype(&cuGreenCtxCreate) create;
    decltype(&cuGreenCtxDestroy) destroy;
    decltype(&cuGreenCtxStreamCreate) stream;
    decltype(&cuGreenCtxGetDevResource) ctx_resource;

    bool load() {
        return entry("cuDeviceGetDevResource", 12040, &get_resource) &&
               entry("cuDevSmResourceSplitByCount", 12040, &split) &&
               entry("cuDevResourceGenerateDesc", 12040, &desc) && entry("cuGreenCtxCreate", 12040, &create) &&
               entry("cuGreenCtxDestroy", 12040, &destroy) && entry("cuGreenCtxStreamCreate", 12050, &stream) &&
               entry("cuGreenCtxGetDevResource", 12040, &ctx_resource);
    }
};

struct Green {
    Driver d;
    CUgreenCtx ctx[2] = {nullptr, nullptr};
    unsigned sms[2] = {0, 0};
    cudaStream_t part[2] = {nullptr, nullptr};  // chain on part[0], hog on part[1]
    cudaStream_t plain[2] = {nullptr, nullptr};
    float* x = nullptr;
    cudaGraphExec_t chain = nullptr;
    int device_sms = 0;
    cudaEvent_t a = nullptr, b = nullptr;
};

// Green context of `n` resources of one split.
CUgreenCtx make_ctx(Green& g, CUdevResource* res, unsigned n, int device, unsigned* sms) {
    CUdevResourceDesc desc = nullptr;
    CUgreenCtx ctx = nullptr;
    if (g.d.desc(&desc, res, n) != CUDA_SUCCESS) return nullptr;
    if (g.d.create(&ctx, desc, (CUdevice)device, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS) return nullptr;
    CUdevResource own = {};
    if (g.d.ctx_resource(ctx, &own, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS) *sms = own.sm.smCount;
    return ctx;
}

}  // namespace

extern "C" {

void bl_green_close(void* h);

// Opens the baseline: one split of `device`'s SMs by `min_sms`, partition 0 one group, partition
// 1 every other SM; a stream on each, two plain streams, and the chain's graph (captured on a plain
// stream). NULL where the driver has no green contexts or a step fails.
void* bl_green_open(int device, unsigned min_sms) {
    Green* g = new Green();
    auto fail = [g]() -> void* {
        bl_green_close(g);
        return nullptr;
    };
    if (cudaSetDevice(device) != cudaSuccess || cudaInitDevice(device, 0, 0) != cudaSuccess || !g->d.load()) return fail();
    cudaDeviceGetAttribute(&g->device_sms, cudaDevAttrMultiProcessorCount, device);
    CUdevResource all = {};
    if (g->d.get_resource((CUdevice)device, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS) return fail();
    unsigned count = 0;
    if (g->d.split(nullptr, &count, &all, nullptr, 0, min_sms) != CUDA_SUCCESS || count < 1) return fail();
    CUdevResource* groups = new CUdevResource[count + 1]();
    CUdevResource rest = {};
    if (g->d.split(groups, &count, &all, &rest, 0, min_sms) != CUDA_SUCCESS) {
        delete[] groups;
        return fail();
    }
    unsigned others = count - 1;
    if (rest.type == CU_DEV_RESOURCE_TYPE_SM && rest.sm.smCount > 0) groups[count] = rest, ++others;
    g->ctx[0] = make_ctx(*g, groups, 1, device, &g->sms[0]);
    g->ctx[1] = others ? make_ctx(*g, groups + 1, others, device, &g->sms[1]) : nullptr;
    delete[] groups;
    if (!g->ctx[0] || !g->ctx[1]) return fail();
    for (int i = 0; i < 2; ++i) {
        if (g->d.stream((CUstream*)&g->part[i], g->ctx[i], CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) return fail();
        cudaStreamCreateWithFlags(&g->plain[i], cudaStreamNonBlocking);
    }
    const int n = 4096;
    cudaMalloc(&g->x, n * sizeof(float));
    cudaMemset(g->x, 0, n * sizeof(float));
    cudaGraph_t graph;
    cudaStreamBeginCapture(g->plain[0], cudaStreamCaptureModeThreadLocal);
    for (int k = 0; k < 100; ++k) bl_green_step<<<n / 256, 256, 0, g->plain[0]>>>(g->x, n);
    cudaStreamEndCapture(g->plain[0], &graph);
    if (cudaGraphInstantiate(&g->chain, graph, 0) != cudaSuccess) return fail();
    cudaGraphDestroy(graph);
    cudaEventCreate(&g->a);
    cudaEventCreate(&g->b);
    cudaDeviceSynchronize();
    return cudaGetLastError() == cudaSuccess ? g : fail();
}

// SMs of partition `which` (0: the chain's, 1: the hog's).
unsigned bl_green_sms(void* h, int which) { return static_cast<Green*>(h)->sms[which & 1]; }

// Microseconds of one replay of the chain graph: `partitioned` 0 on a plain stream, 1 on
// partition 0; `hog` 1 with the hog running (on the other plain stream, or on partition 1) for
// `hog_ns`, launched first. Waits for the hog before returning.
double bl_green_chain_us(void* h, int partitioned, int hog, unsigned long long hog_ns) {
    Green* g = static_cast<Green*>(h);
    cudaStream_t chain = partitioned ? g->part[0] : g->plain[0];
    cudaStream_t other = partitioned ? g->part[1] : g->plain[1];
    int hog_sms = partitioned ? (int)g->sms[1] : g->device_sms;
    if (hog) bl_green_hog<<<8 * hog_sms, 256, 0, other>>>(hog_ns);
    cudaEventRecord(g->a, chain);
    cudaGraphLaunch(g->chain, chain);
    cudaEventRecord(g->b, chain);
    cudaEventSynchronize(g->b);
    float ms = 0;
    cudaEventElapsedTime(&ms, g->a, g->b);
    cudaStreamSynchronize(other);
    return cudaGetLastError() == cudaSuccess ? ms * 1e3 : -1.0;
}

void bl_green_close(void* h) {
    Green* g = static_cast<Green*>(h);
    if (!g) return;
    cudaDeviceSynchronize();
    for (int i = 0; i < 2; ++i) {
        if (g->part[i]) cudaStreamDestroy(g->part[i]);
        if (g->plain[i]) cudaStreamDestroy(g->plain[i]);
        if (g->ctx[i]) g->d.destroy(g->ctx[i]);
    }
    if (g->chain) cudaGraphExecDestroy(g->chain);
    if (g->x) cudaFree(g->x);
    if (g->a) cudaEventDestroy(g->a);
    if (g->b) cudaEventDestroy(g->b);
    delete g;
}

}  // extern "C"
