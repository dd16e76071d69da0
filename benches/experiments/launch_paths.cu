// Which launch call submits fastest from the host? A standalone experiment, not part of the build:
// plain CUDA C++ (CUDA 13.0 headers, the driver's entry points through the runtime), so that no
// ordo code is inside what it measures.
//
//   nvcc -O2 -arch=sm_90 -o launch_paths benches/experiments/launch_paths.cu -lcuda
//   ./launch_paths [rounds]
//
// Issue 30 asks ordo's Kernel::launch for at most 0.97x cudaLaunchKernelEx. ordo launches through
// the driver's cuLaunchKernelEx with the kernel's CUkernel; ordo-bench measured it at 0.98-1.00x,
// while ordo-measure saw the driver's cuLaunchKernelEx at 0.97x. The variants, each submitting
// ITERS launches of the same kernel back to back on one stream (the host's submit time a launch),
// in interleaved rounds; the ratio is each round's against cudaLaunchKernelEx, then the median:
//   chevron        bl_empty<<<1, 1, 0, s>>>()
//   rt-ex          cudaLaunchKernelEx (the baseline)
//   rt-kernel      cudaLaunchKernel (no config struct)
//   drv-ex-kernel  cuLaunchKernelEx with the CUkernel (cudaGetKernel): what ordo does
//   drv-ex-func    cuLaunchKernelEx with the device's CUfunction (cudaGetFuncBySymbol)
//   drv-kernel     cuLaunchKernel with the CUkernel (no config struct, no attribute array)
//   drv-func       cuLaunchKernel with the CUfunction
//   drv-ex-lookup  cuLaunchKernelEx with the CUfunction, found each launch from the stream's
//                  context (cuStreamGetCtx, cuCtxGetId, compared with the id the function was
//                  resolved for): what a per-context function table costs on the hot path
//   drv-ex-cur     the same with the current context (cuCtxGetCurrent, cuCtxGetId) in place of
//                  the stream's
// for the empty kernel and for kernel(float*, int). Look for: whether any driver form beats
// drv-ex-kernel by more than the rounds' spread; if cuLaunchKernel does, ordo should use it for
// launches without attributes.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define DK(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { printf("%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)e_); exit(1); } } while (0)

__global__ void bl_empty() {}
__global__ void bl_ptr_int(float* p, int i) {
    if (i < 0) p[threadIdx.x] = (float)i;
}

static const int ITERS = 2000;

typedef CUresult (*LaunchEx)(const CUlaunchConfig*, CUfunction, void**, void**);
typedef CUresult (*StreamGetCtx)(CUstream, CUcontext*);
typedef CUresult (*CtxGetId)(CUcontext, unsigned long long*);
typedef CUresult (*CtxGetCurrent)(CUcontext*);
typedef CUresult (*Launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**);

static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 45;
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* p;
    CK(cudaMalloc(&p, 128));
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &fn, 12000, cudaEnableDefault, &q));
    LaunchEx launch_ex = (LaunchEx)fn;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault, &q));
    Launch launch = (Launch)fn;
    CK(cudaGetDriverEntryPointByVersion("cuStreamGetCtx", &fn, 12000, cudaEnableDefault, &q));
    StreamGetCtx stream_ctx = (StreamGetCtx)fn;
    CK(cudaGetDriverEntryPointByVersion("cuCtxGetId", &fn, 12000, cudaEnableDefault, &q));
    CtxGetId ctx_id = (CtxGetId)fn;
    CK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q));
    CtxGetCurrent ctx_current = (CtxGetCurrent)fn;
    CUcontext ctx0;
    unsigned long long id0 = 0, id1 = 0;
    DK(stream_ctx((CUstream)s, &ctx0));
    DK(ctx_id(ctx0, &id0));
    cudaKernel_t k_empty, k_ptr;
    CK(cudaGetKernel(&k_empty, bl_empty));
    CK(cudaGetKernel(&k_ptr, bl_ptr_int));
    cudaFunction_t f_empty, f_ptr;
    CK(cudaGetFuncBySymbol(&f_empty, (const void*)bl_empty));
    CK(cudaGetFuncBySymbol(&f_ptr, (const void*)bl_ptr_int));
    const char* names[] = {"chevron", "rt-ex", "rt-kernel", "drv-ex-kernel", "drv-ex-func", "drv-kernel", "drv-func",
                           "drv-ex-lookup", "drv-ex-cur"};
    const int V = 9;
    for (int kernel = 0; kernel < 2; ++kernel) {
        std::vector<std::vector<double>> us(V), ratio(V);
        for (int r = 0; r < rounds + 3; ++r) {
            double t[V];
            for (int v0 = 0; v0 < V; ++v0) {
                int v = (v0 + r) % V;  // rotate the order each round
                CK(cudaStreamSynchronize(s));
                int i = 0;
                void* args_ptr[] = {&p, &i};
                void** args = kernel ? args_ptr : nullptr;
                CUfunction fk = (CUfunction)(kernel ? k_ptr : k_empty);
                CUfunction ff = (CUfunction)(kernel ? f_ptr : f_empty);
                unsigned block = kernel ? 32 : 1;
                CUlaunchConfig cfg = {};
                cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
                cfg.blockDimX = block;
                cfg.blockDimY = cfg.blockDimZ = 1;
                cfg.hStream = (CUstream)s;
                cudaLaunchConfig_t rcfg = {};
                rcfg.gridDim = dim3(1);
                rcfg.blockDim = dim3(block);
                rcfg.stream = s;
                double t0 = now_us();
                for (i = 0; i < ITERS; ++i) {
                    switch (v) {
                        case 0:
                            if (kernel) bl_ptr_int<<<1, 32, 0, s>>>(p, i);
                            else bl_empty<<<1, 1, 0, s>>>();
                            break;
                        case 1:
                            if (kernel) cudaLaunchKernelEx(&rcfg, bl_ptr_int, p, i);
                            else cudaLaunchKernelEx(&rcfg, bl_empty);
                            break;
                        case 2:
                            cudaLaunchKernel(kernel ? (const void*)bl_ptr_int : (const void*)bl_empty, dim3(1), dim3(block),
                                             args, 0, s);
                            break;
                        case 3: launch_ex(&cfg, fk, args, nullptr); break;
                        case 4: launch_ex(&cfg, ff, args, nullptr); break;
                        case 5: launch(fk, 1, 1, 1, block, 1, 1, 0, (CUstream)s, args, nullptr); break;
                        case 6: launch(ff, 1, 1, 1, block, 1, 1, 0, (CUstream)s, args, nullptr); break;
                        case 7: {
                            CUcontext c;
                            unsigned long long id;
                            if (stream_ctx((CUstream)s, &c) == CUDA_SUCCESS && ctx_id(c, &id) == CUDA_SUCCESS && id == id0)
                                launch_ex(&cfg, ff, args, nullptr);
                            else
                                launch_ex(&cfg, fk, args, nullptr);
                            break;
                        }
                        case 8: {
                            CUcontext c;
                            unsigned long long id;
                            if (ctx_current(&c) == CUDA_SUCCESS && ctx_id(c, &id) == CUDA_SUCCESS && id == id0)
                                launch_ex(&cfg, ff, args, nullptr);
                            else
                                launch_ex(&cfg, fk, args, nullptr);
                            break;
                        }
                    }
                }
                t[v] = (now_us() - t0) / ITERS;
                CK(cudaStreamSynchronize(s));
            }
            if (r < 3) continue;  // warm-up rounds
            for (int v = 0; v < V; ++v) {
                us[v].push_back(t[v]);
                ratio[v].push_back(t[v] / t[1]);
            }
        }
        CK(cudaGetLastError());
        printf("%s, %d rounds of %d launches, host submit a launch (median us; median of per-round ratios to rt-ex, p25-p75):\n",
               kernel ? "kernel(float*, int)" : "empty kernel", rounds, ITERS);
        for (int v = 0; v < V; ++v) {
            std::vector<double> rs = ratio[v];
            std::sort(rs.begin(), rs.end());
            printf("  %-14s %7.3f us  %.3f (%.3f-%.3f)\n", names[v], median(us[v]), median(ratio[v]),
                   rs[rs.size() / 4], rs[rs.size() * 3 / 4]);
        }
    }
    // A stream of another context (a second context on the same device, standing for another
    // device's): what does each launch form do with it while the primary context is current?
    {
        CUcontext other;
        DK(cuCtxCreate(&other, nullptr, 0, 0));  // makes `other` current
        CUstream so;
        DK(cuStreamCreate(&so, CU_STREAM_NON_BLOCKING));
        DK(cuCtxPopCurrent(nullptr));
        CK(cudaSetDevice(0));
        CUcontext cur;
        DK(ctx_current(&cur));
        CUlaunchConfig cfg = {};
        cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = so;
        int r_func = (int)launch_ex(&cfg, (CUfunction)f_empty, nullptr, nullptr);
        int r_kernel = (int)launch_ex(&cfg, (CUfunction)k_empty, nullptr, nullptr);
        cudaLaunchConfig_t rcfg = {};
        rcfg.gridDim = dim3(1);
        rcfg.blockDim = dim3(1);
        rcfg.stream = (cudaStream_t)so;
        int r_rt = (int)cudaLaunchKernelEx(&rcfg, bl_empty);
        cudaGetLastError();
        int r_sync = (int)cuStreamSynchronize(so);
        printf("a stream of another context, the primary current (%s): cuLaunchKernelEx(CUfunction of the primary) %d, "
               "cuLaunchKernelEx(CUkernel) %d, cudaLaunchKernelEx %d (as cudaError_t), then cuStreamSynchronize %d\n",
               cur == ctx0 ? "yes" : "no", r_func, r_kernel, r_rt, r_sync);
        DK(cuStreamDestroy(so));
        DK(cuCtxDestroy(other));
        CK(cudaSetDevice(0));
    }
    // Does a device reset give the primary context a new id (so that an id-keyed table never
    // launches a function of the destroyed context)? And its handle?
    CK(cudaStreamDestroy(s));
    CK(cudaFree(p));
    CK(cudaDeviceReset());
    CK(cudaFree(0));
    CUcontext ctx1;
    DK(stream_ctx((CUstream)0, &ctx1));
    DK(ctx_id(ctx1, &id1));
    printf("primary context before reset: %p id %llu; after: %p id %llu\n", (void*)ctx0, id0, (void*)ctx1, id1);
    return 0;
}
