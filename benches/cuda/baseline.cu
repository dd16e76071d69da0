// Plain CUDA C++ baselines for ordo's benchmarks: the same work written the usual way, with the
// measurement loops in C++ so no Rust runs inside them. Compiled into the benches crate by nvcc.
#include <chrono>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include "ordo/pdl.cuh"

namespace {
double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The launch configuration of a chain step over n elements (256-thread blocks) on `s`, with
// programmatic stream serialization (PDL) when pdl != 0; `attr` must outlive the launches.
cudaLaunchConfig_t chain_config(cudaStream_t s, int n, int pdl, cudaLaunchAttribute* attr) {
    *attr = {};
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((n + 255) / 256);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cfg;
}

// GPU milliseconds of what `enqueue()` puts on `s`, between two events recorded around it (the
// end event is waited for).
template <class Enqueue>
double gpu_ms(cudaStream_t s, Enqueue enqueue) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    enqueue();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}
}  // namespace

extern "C" {

__global__ void bl_empty() {}
__global__ void bl_ptr_int(float* p, int n) { if (n < 0) p[0] = 0.0f; }
__global__ void bl_add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
__global__ void bl_heavy(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (int k = 0; k < 64; ++k) v = fmaf(v, 0.999f, 0.001f);
        x[i] = v;
    }
}
// The chain step with the source's PDL placement: wait, then trigger, then the work.
__global__ void bl_chain_step(const float* prev, float* out, const float* scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    if (i < n) out[i] = fmaf(prev[i], scale[i], 1.0f);
}
// The chain step as a user writes it without PDL: no griddepcontrol instruction, one element a
// thread. The baseline of every PDL figure.
__global__ void bl_chain_step_plain(const float* prev, float* out, const float* scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(prev[i], scale[i], 1.0f);
}
// The same, grid-stride (launched over one wave): the other plain shape a user may write.
__global__ void bl_chain_step_plain_stride(const float* prev, float* out, const float* scale, int n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        out[i] = fmaf(prev[i], scale[i], 1.0f);
}

// In place, add_one-like: x[i] = x[i] * 0.999 + 1, with the source's PDL placement.
__global__ void bl_inplace_step(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    if (i < n) x[i] = fmaf(x[i], 0.999f, 1.0f);
}
// The in-place step without griddepcontrol (the plain baseline of the one above).
__global__ void bl_inplace_step_plain(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaf(x[i], 0.999f, 1.0f);
}

// The %globaltimer (nanoseconds) of the SM running the calling thread.
__device__ __forceinline__ unsigned long long bl_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Busy-waits `ns` nanoseconds of %globaltimer, so that launches made behind it queue up and the
// gaps between them are the GPU's, not the host's submit rate.
__global__ void bl_spin(unsigned long long ns) {
    unsigned long long t0 = bl_globaltimer();
    while (bl_globaltimer() - t0 < ns) {
    }
}

// One block: writes its start and end %globaltimer stamps to st[2 i] and st[2 i + 1].
__global__ void bl_stamp(unsigned long long* st, int i) {
    unsigned long long t0 = bl_globaltimer();
    __syncthreads();
    if (threadIdx.x == 0) {
        st[2 * i] = t0;
        st[2 * i + 1] = bl_globaltimer();
    }
}

}  // extern "C"

// ordo's chain step (kernels/cuda/kernels.cu: the same grid-stride body, compiled in the same two
// forms) with stamps: each block writes its entry, its release from the PDL wait, and its end
// (after its stores) to st[3 (k gridDim.x + blockIdx.x) + 0 / 1 / 2].
template <class Pdl>
__device__ __forceinline__ void bl_chain_step_stamped_body(const float* prev, float* out, const float* scale, int n,
                                                           unsigned long long* st, int k) {
    unsigned long long t0 = bl_globaltimer();
    const unsigned count = (unsigned)n;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    Pdl::trigger();
    float s = i < count ? scale[i] : 0.0f;
    Pdl::wait();
    unsigned long long t1 = bl_globaltimer();
    if (i < count) out[i] = fmaf(prev[i], s, 1.0f);
    for (i += stride; i < count; i += stride) out[i] = fmaf(prev[i], scale[i], 1.0f);
    __syncthreads();
    if (threadIdx.x == 0) {
        size_t b = 3 * ((size_t)k * gridDim.x + blockIdx.x);
        st[b] = t0;
        st[b + 1] = t1;
        st[b + 2] = bl_globaltimer();
    }
}
ORDO_PDL_KERNELS(bl_chain_step_stamped, (const float* prev, float* out, const float* scale, int n, unsigned long long* st, int k),
                 (prev, out, scale, n, st, k))

extern "C" {

// A spin of `spin_ns`, then `count` stamp kernels back to back with <<<>>> (stamps in st[2 count]).
void bl_stamp_run(cudaStream_t s, unsigned long long* st, int count, unsigned long long spin_ns) {
    bl_spin<<<1, 1, 0, s>>>(spin_ns);
    for (int i = 0; i < count; ++i) bl_stamp<<<1, 32, 0, s>>>(st, i);
}

// A spin of `spin_ns` (none for 0), then `steps` stamped chain steps with cudaLaunchKernelEx over
// `blocks` blocks: the PDL form with the PDL attribute from the second step on when pdl != 0 (as
// ordo_cuda_kernels::chain launches it), else the plain form.
void bl_chain_stamped(cudaStream_t s, float* a, float* b, const float* scale, int n, int steps, int pdl, int blocks,
                      unsigned long long* st, unsigned long long spin_ns) {
    if (spin_ns) bl_spin<<<1, 1, 0, s>>>(spin_ns);
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = chain_config(s, n, pdl, &attr);
    cfg.gridDim = dim3(blocks);
    for (int k = 0; k < steps; ++k) {
        const float* prev = (k % 2 == 0) ? a : b;
        float* out = (k % 2 == 0) ? b : a;
        cfg.numAttrs = (pdl && k > 0) ? 1 : 0;
        if (pdl) cudaLaunchKernelEx(&cfg, bl_chain_step_stamped_pdl, prev, out, scale, n, st, k);
        else cudaLaunchKernelEx(&cfg, bl_chain_step_stamped, prev, out, scale, n, st, k);
    }
}

typedef CUresult (*bl_launch_ex_fn)(const CUlaunchConfig*, CUfunction, void**, void**);

// Host microseconds per launch over `iters` back-to-back launches (the stream is drained first and
// after; the drain is not counted). which: 0 = <<<>>>, 1 = cudaLaunchKernelEx, 2 = the driver's
// cuLaunchKernelEx with the kernel's CUkernel (cudaGetKernel), the call ordo's Kernel::launch
// makes, from C++ (the entry point and handle looked up before the timing). kernel: 0 empty,
// 1 ptr+int. -1 when the driver path cannot be set up.
double bl_submit_us(cudaStream_t s, int which, int kernel, float* p, int iters) {
    bl_launch_ex_fn launch_ex = nullptr;
    CUfunction f = nullptr;
    CUlaunchConfig dcfg = {};
    if (which == 2) {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult q;
        cudaKernel_t k = nullptr;
        if (cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess ||
            (kernel ? cudaGetKernel(&k, bl_ptr_int) : cudaGetKernel(&k, bl_empty)) != cudaSuccess)
            return -1.0;
        launch_ex = (bl_launch_ex_fn)fn;
        f = (CUfunction)k;
        dcfg.gridDimX = dcfg.gridDimY = dcfg.gridDimZ = 1;
        dcfg.blockDimX = kernel ? 32 : 1;
        dcfg.blockDimY = dcfg.blockDimZ = 1;
        dcfg.hStream = (CUstream)s;
    }
    cudaStreamSynchronize(s);
    double t0 = now_us();
    for (int i = 0; i < iters; ++i) {
        if (which == 2) {
            void* args[] = {&p, &i};
            launch_ex(&dcfg, f, kernel ? args : nullptr, nullptr);
        } else if (which == 0) {
            if (kernel == 0) bl_empty<<<1, 1, 0, s>>>();
            else bl_ptr_int<<<1, 32, 0, s>>>(p, i);
        } else {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(1);
            cfg.blockDim = dim3(kernel == 0 ? 1 : 32);
            cfg.stream = s;
            if (kernel == 0) cudaLaunchKernelEx(&cfg, bl_empty);
            else cudaLaunchKernelEx(&cfg, bl_ptr_int, p, i);
        }
    }
    double t1 = now_us();
    cudaStreamSynchronize(s);
    return (t1 - t0) / iters;
}

// One launch of the empty kernel and a stream synchronise, microseconds (host clock).
double bl_roundtrip_us(cudaStream_t s) {
    double t0 = now_us();
    bl_empty<<<1, 1, 0, s>>>();
    cudaStreamSynchronize(s);
    return now_us() - t0;
}

// `kernels` add_one launches over x[n] eagerly; GPU milliseconds from events.
double bl_eager_add_one_ms(cudaStream_t s, float* x, int n, int kernels) {
    return gpu_ms(s, [&] {
        for (int k = 0; k < kernels; ++k) bl_add_one<<<(n + 255) / 256, 256, 0, s>>>(x, n);
    });
}

// Captures `kernels` add_one launches into a graph and instantiates it; instantiation ms out.
cudaGraphExec_t bl_graph_add_one(cudaStream_t s, float* x, int n, int kernels, double* instantiate_ms) {
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int k = 0; k < kernels; ++k) bl_add_one<<<(n + 255) / 256, 256, 0, s>>>(x, n);
    cudaStreamEndCapture(s, &g);
    cudaGraphExec_t e = nullptr;
    double t0 = now_us();
    cudaGraphInstantiate(&e, g, 0);
    *instantiate_ms = (now_us() - t0) / 1e3;
    cudaGraphDestroy(g);
    cudaGraphUpload(e, s);
    cudaStreamSynchronize(s);
    return e;
}

// One replay of `e`: GPU milliseconds from events; host microseconds of cudaGraphLaunch out.
double bl_graph_replay_ms(cudaGraphExec_t e, cudaStream_t s, double* launch_us) {
    return gpu_ms(s, [&] {
        double t0 = now_us();
        cudaGraphLaunch(e, s);
        *launch_us = now_us() - t0;
    });
}

void bl_graph_destroy(cudaGraphExec_t e) { cudaGraphExecDestroy(e); }

// Host microseconds of one cudaGraphLaunch (the stream is drained after, not counted).
double bl_graph_launch_us(cudaGraphExec_t e, cudaStream_t s) {
    double t0 = now_us();
    cudaGraphLaunch(e, s);
    double t1 = now_us();
    cudaStreamSynchronize(s);
    return t1 - t0;
}

// Host microseconds per event operation over `iters`: op 0 record, 1 record + wait, 2 event
// query, 3 stream query.
double bl_event_ops_us(cudaStream_t a, cudaStream_t b, cudaEvent_t e, int op, int iters) {
    double t0 = now_us();
    for (int i = 0; i < iters; ++i) {
        switch (op) {
            case 0: cudaEventRecord(e, a); break;
            case 1: cudaEventRecord(e, a); cudaStreamWaitEvent(b, e, 0); break;
            case 2: cudaEventQuery(e); break;
            default: cudaStreamQuery(a); break;
        }
    }
    return (now_us() - t0) / iters;
}

// `steps` in-place steps over x[n]: the source's PDL kernel (wait then trigger at the start) with
// the PDL attribute when pdl != 0, else the same step compiled without griddepcontrol; GPU ms.
double bl_inplace_chain_ms(cudaStream_t s, float* x, int n, int steps, int pdl) {
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = chain_config(s, n, pdl, &attr);
    return gpu_ms(s, [&] {
        for (int k = 0; k < steps; ++k) {
            if (pdl) cudaLaunchKernelEx(&cfg, bl_inplace_step, x, n);
            else cudaLaunchKernelEx(&cfg, bl_inplace_step_plain, x, n);
        }
    });
}

// `steps` dependent chain steps; GPU ms from events. form 0: the plain step, one element a thread
// (what a user writes without PDL); 1: the plain grid-stride step over `blocks` blocks; 2: the
// source's PDL step (wait then trigger at the start) with the PDL attribute, one element a thread.
double bl_chain_ms(cudaStream_t s, float* a, float* b, const float* scale, int n, int steps, int form, int blocks) {
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = chain_config(s, n, form == 2, &attr);
    if (form == 1) cfg.gridDim = dim3(blocks);
    return gpu_ms(s, [&] {
        for (int k = 0; k < steps; ++k) {
            const float* prev = (k % 2 == 0) ? a : b;
            float* out = (k % 2 == 0) ? b : a;
            if (form == 0) cudaLaunchKernelEx(&cfg, bl_chain_step_plain, prev, out, scale, n);
            else if (form == 1) cudaLaunchKernelEx(&cfg, bl_chain_step_plain_stride, prev, out, scale, n);
            else cudaLaunchKernelEx(&cfg, bl_chain_step, prev, out, scale, n);
        }
    });
}

// One cudaMemcpyAsync of `bytes`; GPU ms from events.
double bl_copy_ms(void* dst, const void* src, size_t bytes, int kind, cudaStream_t s) {
    return gpu_ms(s, [&] { cudaMemcpyAsync(dst, src, bytes, (cudaMemcpyKind)kind, s); });
}

// The source's chunked pipeline: chunks over `streams` streams (copy in, heavy, copy out), ms.
double bl_pipeline_ms(const float* h_in, float* d_in, float* h_out, size_t n, int chunks, int streams) {
    cudaStream_t ss[16];
    for (int i = 0; i < streams; ++i) cudaStreamCreateWithFlags(&ss[i], cudaStreamNonBlocking);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaDeviceSynchronize();
    cudaEventRecord(a, 0);
    for (int i = 0; i < streams; ++i) cudaStreamWaitEvent(ss[i], a, 0);
    for (int c = 0; c < chunks; ++c) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks, len = hi - lo;
        cudaStream_t s = ss[c % streams];
        cudaMemcpyAsync(d_in + lo, h_in + lo, len * 4, cudaMemcpyHostToDevice, s);
        bl_heavy<<<(unsigned)((len + 255) / 256), 256, 0, s>>>(d_in + lo, (int)len);
        cudaMemcpyAsync(h_out + lo, d_in + lo, len * 4, cudaMemcpyDeviceToHost, s);
    }
    cudaEvent_t done[16];
    for (int i = 0; i < streams; ++i) {
        cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming);
        cudaEventRecord(done[i], ss[i]);
        cudaStreamWaitEvent(0, done[i], 0);
    }
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    for (int i = 0; i < streams; ++i) {
        cudaEventDestroy(done[i]);
        cudaStreamDestroy(ss[i]);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}

}  // extern "C"

// ---- Several GPUs -------------------------------------------------------------------------------
#include <cstdlib>
#include <dlfcn.h>
#include <vector>

extern "C" {

// `bytes` of cudaMalloc memory on `device` (made current for the call), as a C++ user allocates it.
void* bl_device_alloc(int device, size_t bytes) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
    cudaSetDevice(previous);
    return p;
}
void bl_device_free(int device, void* p) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    cudaFree(p);
    cudaSetDevice(previous);
}

// One cudaMemcpyPeerAsync of `bytes` on `s` (a stream of dst_device); GPU ms from events of that
// device.
double bl_peer_copy_ms(void* dst, int dst_device, const void* src, int src_device, size_t bytes, cudaStream_t s) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(dst_device);
    double ms = gpu_ms(s, [&] { cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, s); });
    cudaSetDevice(previous);
    return ms;
}

// Both directions at once: a0 (device 0) -> b1 (device 1) on s1, a1 -> b0 on s0; host ms from the
// enqueue to both streams synchronised.
double bl_peer_both_ms(void* b0, const void* a0, void* b1, const void* a1, size_t bytes, cudaStream_t s0,
                       cudaStream_t s1) {
    cudaStreamSynchronize(s0);
    cudaStreamSynchronize(s1);
    double t0 = now_us();
    cudaMemcpyPeerAsync(b1, 1, a0, 0, bytes, s1);
    cudaMemcpyPeerAsync(b0, 0, a1, 1, bytes, s0);
    cudaStreamSynchronize(s0);
    cudaStreamSynchronize(s1);
    return (now_us() - t0) / 1e3;
}

}  // extern "C"

namespace {
// NCCL, loaded at run time as ordo loads it (libnccl.so.2, or ORDO_NCCL), called as a C++ user
// calls it: ncclCommInitAll, then one group of ncclAllReduce calls an iteration.
typedef struct ncclComm* nccl_comm_t;
struct BlNccl {
    void* lib = nullptr;
    int (*init_all)(nccl_comm_t*, int, const int*) = nullptr;
    int (*all_reduce)(const void*, void*, size_t, int, int, nccl_comm_t, cudaStream_t) = nullptr;
    int (*group_start)() = nullptr;
    int (*group_end)() = nullptr;
    int (*destroy)(nccl_comm_t) = nullptr;
    std::vector<nccl_comm_t> comms;
};
}  // namespace

extern "C" {

// NCCL communicators for devices 0 .. ndev-1 of this process; NULL when NCCL cannot be loaded or
// initialised.
void* bl_nccl_open(int ndev) {
    const char* name = getenv("ORDO_NCCL");
    void* lib = dlopen(name && *name ? name : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    BlNccl* n = new BlNccl;
    n->lib = lib;
    n->init_all = (int (*)(nccl_comm_t*, int, const int*))dlsym(lib, "ncclCommInitAll");
    n->all_reduce = (int (*)(const void*, void*, size_t, int, int, nccl_comm_t, cudaStream_t))dlsym(lib, "ncclAllReduce");
    n->group_start = (int (*)())dlsym(lib, "ncclGroupStart");
    n->group_end = (int (*)())dlsym(lib, "ncclGroupEnd");
    n->destroy = (int (*)(nccl_comm_t))dlsym(lib, "ncclCommDestroy");
    std::vector<int> devs(ndev);
    for (int i = 0; i < ndev; ++i) devs[i] = i;
    n->comms.resize(ndev);
    if (!n->init_all || !n->all_reduce || !n->group_start || !n->group_end || !n->destroy ||
        n->init_all(n->comms.data(), ndev, devs.data()) != 0) {
        dlclose(lib);
        delete n;
        return nullptr;
    }
    return n;
}

void bl_nccl_close(void* handle) {
    BlNccl* n = static_cast<BlNccl*>(handle);
    if (!n) return;
    for (nccl_comm_t c : n->comms) n->destroy(c);
    delete n;  // the library stays loaded: ordo's copy of it may be in use
}

// `iters` float sum all-reduces of `count` elements over every rank (send[i], recv[i] on
// streams[i]), one group an iteration; host microseconds an iteration, all streams synchronised.
// As bl_nccl_all_reduce_us, on the communicators `comms` (one per stream) instead of the handle's
// own: the same C++ calls on another set of communicators (ordo's), to tell a cost of the wrapper
// from a difference between two communicator sets.
double bl_nccl_all_reduce_on_us(void* handle, void* const* comms, float** send, float** recv, size_t count,
                                cudaStream_t* streams, int iters) {
    BlNccl* n = static_cast<BlNccl*>(handle);
    const int ndev = (int)n->comms.size();
    for (int i = 0; i < ndev; ++i) cudaStreamSynchronize(streams[i]);
    double t0 = now_us();
    for (int it = 0; it < iters; ++it) {
        n->group_start();
        for (int i = 0; i < ndev; ++i)
            n->all_reduce(send[i], recv[i], count, 7 /* ncclFloat32 */, 0 /* ncclSum */, (nccl_comm_t)comms[i], streams[i]);
        n->group_end();
    }
    for (int i = 0; i < ndev; ++i) cudaStreamSynchronize(streams[i]);
    return (now_us() - t0) / iters;
}

double bl_nccl_all_reduce_us(void* handle, float** send, float** recv, size_t count, cudaStream_t* streams, int iters) {
    BlNccl* n = static_cast<BlNccl*>(handle);
    const int ndev = (int)n->comms.size();
    for (int i = 0; i < ndev; ++i) cudaStreamSynchronize(streams[i]);
    double t0 = now_us();
    for (int it = 0; it < iters; ++it) {
        n->group_start();
        for (int i = 0; i < ndev; ++i) n->all_reduce(send[i], recv[i], count, 7 /* ncclFloat32 */, 0 /* ncclSum */, n->comms[i], streams[i]);
        n->group_end();
    }
    for (int i = 0; i < ndev; ++i) cudaStreamSynchronize(streams[i]);
    return (now_us() - t0) / iters;
}

}  // extern "C"
