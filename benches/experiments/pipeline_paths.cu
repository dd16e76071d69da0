// Which copy path could take the chunked pipeline closer to the both-directions bound? A standalone
// experiment, not part of the build: plain CUDA C++, so that no ordo code is inside what it measures.
//
//   nvcc -O2 -arch=sm_90 -o pipeline_paths benches/experiments/pipeline_paths.cu -lcuda
//   ./pipeline_paths [rounds]
//
// The work is the report's pipeline: 256 MiB of floats copied in from pinned host memory, the
// 64-step kernel into a second device buffer, 256 MiB copied out to pinned host memory. Every
// variant is timed between two events on one stream (forked to and joined from the others), in
// interleaved rounds; the table gives medians and each median against the bound (both full DMA
// copies at once) measured in the same rounds. Every pipeline's output is checked against a CPU
// reference once before timing. BENCHMARKS.md ("The 1.04x target") reads the results.
//
// The paths:
//   - DMA: cudaMemcpyAsync, one copy a chunk, in on one stream, compute on a second, out on a third
//     (what ordo's staged plan enqueues), on 1, 2 or 3 copy streams a direction, eager or replayed
//     as a graph; the copies alone, one a chunk and as one cudaMemcpyBatchAsync a direction.
//   - SM: copy kernels reading or writing mapped pinned memory, one launch a chunk, or one
//     persistent kernel a direction that signals each chunk through a counter the compute stream
//     waits on (cuStreamWaitValue32) and waits for each chunk's compute through a flag the compute
//     stream writes (cuStreamWriteValue32).
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CU(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { printf("%s:%d CUresult %d\n", __FILE__, __LINE__, (int)e_); exit(1); } } while (0)

// The report's compute: out[i] = 64 dependent FMAs of in[i].
__global__ void heavy_into(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
#pragma unroll 8
        for (int k = 0; k < 64; ++k) v = fmaf(v, 0.999f, 0.001f);
        out[i] = v;
    }
}

// One slice of a grid-stride 16-byte copy, four loads in flight a thread.
__device__ void copy_slice(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n16) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];
        d[i] = a; d[i + stride] = b; d[i + 2 * stride] = c; d[i + 3 * stride] = e;
    }
    for (; i < n16; i += stride) d[i] = s[i];
}

__global__ void sm_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) { copy_slice(src, dst, n16); }

// Persistent copy-in: chunk after chunk; each block adds one to done[k] once its share of chunk k
// is written, so done[k] == gridDim.x means chunk k is in.
__global__ void sm_copy_in_signal(const uint4* src, uint4* dst, size_t chunk16, int chunks, unsigned* done) {
    for (int k = 0; k < chunks; ++k) {
        copy_slice(src + k * chunk16, dst + k * chunk16, chunk16);
        __syncthreads();
        if (threadIdx.x == 0) { __threadfence(); atomicAdd(&done[k], 1u); }
    }
}

// Persistent copy-out: each block waits for ready[k] (written by the compute stream after chunk
// k's kernel), then copies its share of chunk k. A wait that runs past ~2 s sets *timed_out and
// gives up, so a broken experiment ends instead of hanging the GPU.
__global__ void sm_copy_out_wait(const uint4* src, uint4* dst, size_t chunk16, int chunks, volatile unsigned* ready, unsigned* timed_out) {
    __shared__ int give_up;
    for (int k = 0; k < chunks; ++k) {
        if (threadIdx.x == 0) {
            give_up = 0;
            long long start = clock64();
            while (ready[k] == 0) {
                __nanosleep(200);
                if (clock64() - start > 4000000000LL) { give_up = 1; atomicExch(timed_out, 1u); break; }
            }
            __threadfence();
        }
        __syncthreads();
        if (give_up) return;
        copy_slice(src + k * chunk16, dst + k * chunk16, chunk16);
    }
}

namespace {
const size_t N = 64ull << 20;  // floats: 256 MiB a direction
const size_t B = N * 4;
const int MAX_CHUNKS = 256;
const int COPY_BLOCKS = 32;  // blocks (of 1024 threads) of each SM copy kernel
float *hin, *hout, *din, *dout;
unsigned* flags;  // done[MAX_CHUNKS], ready[MAX_CHUNKS], timed_out
cudaStream_t s0, sc, ins[3], outs[2];
cudaEvent_t t0, t1, fork_ev, join_ev[6];
std::vector<cudaEvent_t> ein, ec;

std::vector<cudaStream_t> workers() { return {sc, ins[0], ins[1], ins[2], outs[0], outs[1]}; }
void fork_all() {
    CK(cudaEventRecord(fork_ev, s0));
    for (cudaStream_t s : workers()) CK(cudaStreamWaitEvent(s, fork_ev));
}
void join_all() {
    int i = 0;
    for (cudaStream_t s : workers()) { CK(cudaEventRecord(join_ev[i], s)); CK(cudaStreamWaitEvent(s0, join_ev[i])); ++i; }
}
float elapsed() { CK(cudaEventRecord(t1, s0)); CK(cudaEventSynchronize(t1)); float ms; CK(cudaEventElapsedTime(&ms, t0, t1)); return ms; }
float time_eager(const std::function<void()>& body) { CK(cudaEventRecord(t0, s0)); fork_all(); body(); join_all(); return elapsed(); }
cudaGraphExec_t capture(const std::function<void()>& body) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    fork_all(); body(); join_all();
    CK(cudaStreamEndCapture(s0, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, s0));
    return ge;
}
float time_graph(cudaGraphExec_t ge) { CK(cudaEventRecord(t0, s0)); CK(cudaGraphLaunch(ge, s0)); return elapsed(); }

void sm_copy_on(const void* src, void* dst, size_t bytes, cudaStream_t s) {
    sm_copy<<<COPY_BLOCKS, 1024, 0, s>>>((const uint4*)src, (uint4*)dst, bytes / 16);
}
void compute(size_t off, size_t c) { heavy_into<<<(unsigned)((c + 255) / 256), 256, 0, sc>>>(din + off, dout + off, (int)c); }

// The staged pipeline: in on ins[k % nin], compute on sc, out on outs[k % nout]; sm_in / sm_out
// replace a direction's DMA copies by SM copy kernels.
void pipeline(int chunks, int nin, int nout, bool sm_in, bool sm_out) {
    size_t c = N / chunks;
    for (int k = 0; k < chunks; ++k) {
        size_t off = k * c;
        cudaStream_t si = ins[k % nin], so = outs[k % nout];
        if (sm_in) sm_copy_on(hin + off, din + off, c * 4, si);
        else CK(cudaMemcpyAsync(din + off, hin + off, c * 4, cudaMemcpyHostToDevice, si));
        CK(cudaEventRecord(ein[k], si));
        CK(cudaStreamWaitEvent(sc, ein[k]));
        compute(off, c);
        CK(cudaEventRecord(ec[k], sc));
        CK(cudaStreamWaitEvent(so, ec[k]));
        if (sm_out) sm_copy_on(dout + off, hout + off, c * 4, so);
        else CK(cudaMemcpyAsync(hout + off, dout + off, c * 4, cudaMemcpyDeviceToHost, so));
    }
}

// Persistent SM copies signalled through memory (see the kernels); a direction not persistent
// uses DMA and events as above.
void pipeline_signalled(int chunks, bool persist_in, bool persist_out) {
    size_t c = N / chunks;
    unsigned* done = flags;
    unsigned* ready = flags + MAX_CHUNKS;
    CK(cudaMemsetAsync(flags, 0, 2 * MAX_CHUNKS * 4, ins[0]));
    CK(cudaEventRecord(ein[0], ins[0]));
    CK(cudaStreamWaitEvent(sc, ein[0]));
    CK(cudaStreamWaitEvent(outs[0], ein[0]));
    if (persist_out) sm_copy_out_wait<<<COPY_BLOCKS, 1024, 0, outs[0]>>>((const uint4*)dout, (uint4*)hout, c / 4, chunks, ready, flags + 2 * MAX_CHUNKS);
    if (persist_in) sm_copy_in_signal<<<COPY_BLOCKS, 1024, 0, ins[0]>>>((const uint4*)hin, (uint4*)din, c / 4, chunks, done);
    for (int k = 0; k < chunks; ++k) {
        size_t off = k * c;
        if (persist_in) {
            CU(cuStreamWaitValue32((CUstream)sc, (CUdeviceptr)(done + k), COPY_BLOCKS, CU_STREAM_WAIT_VALUE_GEQ));
        } else {
            CK(cudaMemcpyAsync(din + off, hin + off, c * 4, cudaMemcpyHostToDevice, ins[0]));
            CK(cudaEventRecord(ein[k], ins[0]));
            CK(cudaStreamWaitEvent(sc, ein[k]));
        }
        compute(off, c);
        if (persist_out) {
            CU(cuStreamWriteValue32((CUstream)sc, (CUdeviceptr)(ready + k), 1, 0));
        } else {
            CK(cudaEventRecord(ec[k], sc));
            CK(cudaStreamWaitEvent(outs[0], ec[k]));
            CK(cudaMemcpyAsync(hout + off, dout + off, c * 4, cudaMemcpyDeviceToHost, outs[0]));
        }
    }
}

// The copies alone, no compute and no waits: chunked on nin / nout streams a direction.
void copies(int chunks, int nin, int nout, bool do_in, bool do_out) {
    size_t c = B / chunks;
    for (int k = 0; k < chunks; ++k) {
        if (do_in) CK(cudaMemcpyAsync((char*)din + k * c, (char*)hin + k * c, c, cudaMemcpyHostToDevice, ins[k % nin]));
        if (do_out) CK(cudaMemcpyAsync((char*)hout + k * c, (char*)dout + k * c, c, cudaMemcpyDeviceToHost, outs[k % nout]));
    }
}

// The copies alone as one cudaMemcpyBatchAsync a direction (CUDA 13.0's signature).
void copies_batched(int chunks) {
    size_t c = B / chunks;
    std::vector<void*> d1(chunks), d2(chunks);
    std::vector<const void*> s1(chunks), s2(chunks);
    std::vector<size_t> sz(chunks, c);
    for (int k = 0; k < chunks; ++k) {
        d1[k] = (char*)din + k * c; s1[k] = (char*)hin + k * c;
        d2[k] = (char*)hout + k * c; s2[k] = (char*)dout + k * c;
    }
    cudaMemcpyAttributes a = {};
    a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
    CK(cudaMemcpyBatchAsync(d1.data(), s1.data(), sz.data(), chunks, &a, &idx, 1, ins[0]));
    CK(cudaMemcpyBatchAsync(d2.data(), s2.data(), sz.data(), chunks, &a, &idx, 1, outs[0]));
}

bool output_matches() {
    CK(cudaDeviceSynchronize());
    unsigned timed_out = 0;
    CK(cudaMemcpy(&timed_out, flags + 2 * MAX_CHUNKS, 4, cudaMemcpyDeviceToHost));
    if (timed_out) { printf("  a persistent copy-out kernel gave up waiting\n"); return false; }
    for (size_t i = 0; i < N; i += 9973) {
        float v = hin[i];
        for (int k = 0; k < 64; ++k) v = fmaf(v, 0.999f, 0.001f);
        if (v != hout[i]) { printf("  MISMATCH at %zu: %g, expected %g\n", i, hout[i], v); return false; }
    }
    return true;
}

struct Variant {
    std::string name;
    std::function<float()> time;
    bool is_pipeline;
};
}  // namespace

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IONBF, 0);
    // A persistent kernel spins while the compute stream's kernels must still start; with lazy
    // module loading a kernel's first launch can wait for the spinning one (ordo's
    // docs/cuda-behaviours.md, CB-11). Load everything up front.
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    int rounds = argc > 1 ? atoi(argv[1]) : 11;
    CK(cudaSetDevice(0));
    CU(cuInit(0));
    CK(cudaMallocHost(&hin, B));
    CK(cudaMallocHost(&hout, B));
    CK(cudaMalloc(&din, B));
    CK(cudaMalloc(&dout, B));
    CK(cudaMalloc(&flags, (2 * MAX_CHUNKS + 1) * 4));
    CK(cudaMemset(flags, 0, (2 * MAX_CHUNKS + 1) * 4));
    for (size_t i = 0; i < N; ++i) hin[i] = (float)((i * 2654435761u) % 1000) * 0.001f + 0.5f;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
    for (auto& s : ins) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto& s : outs) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));
    CK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
    for (auto& e : join_ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ein.resize(MAX_CHUNKS);
    ec.resize(MAX_CHUNKS);
    for (int k = 0; k < MAX_CHUNKS; ++k) {
        CK(cudaEventCreateWithFlags(&ein[k], cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&ec[k], cudaEventDisableTiming));
    }
    int ce = 0, mem_ops = 0;
    CK(cudaDeviceGetAttribute(&ce, cudaDevAttrAsyncEngineCount, 0));
    // The attribute of the _v1 memory-operation calls: it reads 0 where the current calls this
    // program makes (cuStreamWaitValue32, cuStreamWriteValue32) run (ordo's docs/cuda-behaviours.md,
    // CB-24).
    CU(cuDeviceGetAttribute(&mem_ops, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, 0));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs, %d async copy engines, stream memory operations %d, %d rounds\n", p.name, p.multiProcessorCount, ce, mem_ops, rounds);

    std::vector<Variant> vs;
    auto eager = [&](std::string name, std::function<void()> f, bool is_pipeline) { vs.push_back({name, [f] { return time_eager(f); }, is_pipeline}); };
    auto graph = [&](std::string name, std::function<void()> f, bool is_pipeline) {
        cudaGraphExec_t ge = capture(f);
        vs.push_back({name, [ge] { return time_graph(ge); }, is_pipeline});
    };
    auto num = [](int x) { return std::to_string(x); };
    eager("bound: both full DMA copies at once", [] { copies(1, 1, 1, true, true); }, false);
    eager("DMA in alone, one copy", [] { copies(1, 1, 1, true, false); }, false);
    eager("DMA out alone, one copy", [] { copies(1, 1, 1, false, true); }, false);
    eager("SM in alone, one kernel", [] { sm_copy_on(hin, din, B, ins[0]); }, false);
    eager("SM out alone, one kernel", [] { sm_copy_on(dout, hout, B, outs[0]); }, false);
    eager("SM in + SM out at once", [] { sm_copy_on(hin, din, B, ins[0]); sm_copy_on(dout, hout, B, outs[0]); }, false);
    eager("DMA in + SM out at once", [] { copies(1, 1, 1, true, false); sm_copy_on(dout, hout, B, outs[0]); }, false);
    eager("SM in + DMA out at once", [] { sm_copy_on(hin, din, B, ins[0]); copies(1, 1, 1, false, true); }, false);
    for (int ch : {32, 64}) {
        eager("DMA in alone x" + num(ch), [ch] { copies(ch, 1, 1, true, false); }, false);
        eager("DMA in alone x" + num(ch) + ", 2 streams", [ch] { copies(ch, 2, 1, true, false); }, false);
        eager("DMA out alone x" + num(ch), [ch] { copies(ch, 1, 1, false, true); }, false);
        eager("DMA copies both ways x" + num(ch), [ch] { copies(ch, 1, 1, true, true); }, false);
        eager("DMA copies both ways x" + num(ch) + ", 2+2 streams", [ch] { copies(ch, 2, 2, true, true); }, false);
        graph("DMA copies both ways x" + num(ch) + ", graph", [ch] { copies(ch, 1, 1, true, true); }, false);
        eager("DMA copies both ways x" + num(ch) + ", one batch a way", [ch] { copies_batched(ch); }, false);
    }
    for (int ch : {16, 24, 32, 48, 64, 96}) eager("pipeline DMA x" + num(ch), [ch] { pipeline(ch, 1, 1, false, false); }, true);
    for (int ch : {32, 64}) {
        graph("pipeline DMA x" + num(ch) + ", graph", [ch] { pipeline(ch, 1, 1, false, false); }, true);
        eager("pipeline DMA x" + num(ch) + ", in on 2 streams", [ch] { pipeline(ch, 2, 1, false, false); }, true);
        eager("pipeline DMA x" + num(ch) + ", out on 2 streams", [ch] { pipeline(ch, 1, 2, false, false); }, true);
        eager("pipeline SM in, DMA out x" + num(ch), [ch] { pipeline(ch, 1, 1, true, false); }, true);
        eager("pipeline DMA in, SM out x" + num(ch), [ch] { pipeline(ch, 1, 1, false, true); }, true);
        eager("pipeline SM both x" + num(ch), [ch] { pipeline(ch, 1, 1, true, true); }, true);
    }
    for (int ch : {64, 128, 256}) {
        eager("signalled: persistent SM both x" + num(ch), [ch] { pipeline_signalled(ch, true, true); }, true);
        eager("signalled: DMA in, persistent SM out x" + num(ch), [ch] { pipeline_signalled(ch, false, true); }, true);
        eager("signalled: persistent SM in, DMA out x" + num(ch), [ch] { pipeline_signalled(ch, true, false); }, true);
    }

    int failed = 0;
    for (auto& v : vs) {
        v.time();
        if (v.is_pipeline) {
            if (!output_matches()) { printf("  in: %s\n", v.name.c_str()); ++failed; }
            memset(hout, 0, B);
        }
    }
    std::vector<std::vector<float>> t(vs.size());
    for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < vs.size(); ++i) t[i].push_back(vs[i].time());
    float bound = 0;
    printf("%-52s %10s %10s %10s %9s\n", "variant", "median ms", "min", "max", "vs bound");
    for (size_t i = 0; i < vs.size(); ++i) {
        std::vector<float> x = t[i];
        std::sort(x.begin(), x.end());
        float m = x[x.size() / 2];
        if (i == 0) bound = m;
        printf("%-52s %10.3f %10.3f %10.3f %9.3f\n", vs[i].name.c_str(), m, x.front(), x.back(), m / bound);
    }
    CK(cudaGetLastError());
    printf("outputs checked: %zu pipelines, %d wrong\n", (size_t)std::count_if(vs.begin(), vs.end(), [](const Variant& v) { return v.is_pipeline; }), failed);
    return failed ? 1 : 0;
}
