// Does a graph's replay time depend on its instantiation? A standalone experiment, not part of the
// build: plain CUDA C++, no ordo code.
//
//   nvcc -O2 -arch=sm_90 -o graph_instances benches/experiments/graph_instances.cu
//   ./graph_instances [rounds]
//
// ordo-bench's decode group replayed ordo's bucket graphs and the hand-captured C++ graphs of the
// same step (batch 64: 1 MiB copied in, three element-wise kernels, 1 MiB copied out) at 66.5-67.7,
// 71.6-72.7 or 75.5-75.7 us a replay, and a graph kept its level for the whole measurement, while
// another instantiation of the same work (ordo's, C++'s, or ordo's without PDL) sat at another.
// Here one step is captured once and instantiated INSTANCES times; each instance is replayed in
// interleaved rounds (each replay synchronised, timed on the host), and each instance's median is
// printed, for the step as it is and for the step without its copies (kernels only) and with the
// copies only. The same step run eagerly on INSTANCES streams tells whether a stream has such a
// level too, and the step eagerly on one stream with INSTANCES pairs of pinned buffers whether a
// buffer has one. Look for: instances whose medians differ by more than the rounds' spread, and which
// part (copies or kernels) carries the difference.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const int INSTANCES = 8;
static const int STEPS = 20;
static const int N = 64 * 4096;

__global__ void step_kernel(const float* prev, float* out, const float* scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(prev[i], scale[i], 1.0f);
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Bufs {
    float *h_x, *h_t, *d_x, *d_a, *d_b, *d_scale;
};

// parts: 1 copies, 2 kernels, 3 both.
static void step(const Bufs& b, cudaStream_t s, int parts) {
    if (parts & 1) CK(cudaMemcpyAsync(b.d_x, b.h_x, N * 4, cudaMemcpyHostToDevice, s));
    if (parts & 2) {
        step_kernel<<<N / 256, 256, 0, s>>>(b.d_x, b.d_a, b.d_scale, N);
        step_kernel<<<N / 256, 256, 0, s>>>(b.d_a, b.d_b, b.d_scale, N);
        step_kernel<<<N / 256, 256, 0, s>>>(b.d_b, b.d_a, b.d_scale, N);
    }
    if (parts & 1) CK(cudaMemcpyAsync(b.h_t, b.d_a, N * 4, cudaMemcpyDeviceToHost, s));
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    CK(cudaSetDevice(0));
    Bufs b;
    CK(cudaHostAlloc((void**)&b.h_x, N * 4, 0));
    CK(cudaHostAlloc((void**)&b.h_t, N * 4, 0));
    for (int i = 0; i < N; ++i) b.h_x[i] = (float)(i % 101) * 0.01f;
    CK(cudaMalloc(&b.d_x, N * 4));
    CK(cudaMalloc(&b.d_a, N * 4));
    CK(cudaMalloc(&b.d_b, N * 4));
    CK(cudaMalloc(&b.d_scale, N * 4));
    CK(cudaMemset(b.d_scale, 0, N * 4));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const char* names[] = {"", "copies only", "kernels only", "whole step"};
    for (int parts : {3, 1, 2}) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        step(b, s, parts);
        CK(cudaStreamEndCapture(s, &g));
        std::vector<cudaGraphExec_t> execs(INSTANCES);
        for (auto& e : execs) CK(cudaGraphInstantiate(&e, g, 0));
        std::vector<std::vector<double>> med(INSTANCES);
        for (int r = 0; r < rounds + 1; ++r) {
            for (int k0 = 0; k0 < INSTANCES; ++k0) {
                int k = (k0 + r) % INSTANCES;
                std::vector<double> us;
                for (int i = 0; i < STEPS; ++i) {
                    double t0 = now_us();
                    CK(cudaGraphLaunch(execs[k], s));
                    CK(cudaStreamSynchronize(s));
                    us.push_back(now_us() - t0);
                }
                if (r > 0) med[k].push_back(median(us));
            }
        }
        printf("%s, %d instances of one graph, replay + synchronise (median us of %d rounds' medians):", names[parts],
               INSTANCES, rounds);
        for (int k = 0; k < INSTANCES; ++k) printf(" %.1f", median(med[k]));
        printf("\n");
        for (auto e : execs) CK(cudaGraphExecDestroy(e));
        CK(cudaGraphDestroy(g));
    }
    // The same step eagerly, on INSTANCES streams.
    std::vector<cudaStream_t> streams(INSTANCES);
    for (auto& st : streams) CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    std::vector<std::vector<double>> med(INSTANCES);
    for (int r = 0; r < rounds + 1; ++r) {
        for (int k0 = 0; k0 < INSTANCES; ++k0) {
            int k = (k0 + r) % INSTANCES;
            std::vector<double> us;
            for (int i = 0; i < STEPS; ++i) {
                double t0 = now_us();
                step(b, streams[k], 3);
                CK(cudaStreamSynchronize(streams[k]));
                us.push_back(now_us() - t0);
            }
            if (r > 0) med[k].push_back(median(us));
        }
    }
    printf("whole step eagerly, on %d streams (median us):", INSTANCES);
    for (int k = 0; k < INSTANCES; ++k) printf(" %.1f", median(med[k]));
    printf("\n");
    // The same step eagerly on one stream, with INSTANCES pairs of pinned buffers.
    std::vector<Bufs> pairs(INSTANCES, b);
    for (auto& p : pairs) {
        CK(cudaHostAlloc((void**)&p.h_x, N * 4, 0));
        CK(cudaHostAlloc((void**)&p.h_t, N * 4, 0));
        for (int i = 0; i < N; ++i) p.h_x[i] = b.h_x[i];
    }
    for (auto& m : med) m.clear();
    for (int r = 0; r < rounds + 1; ++r) {
        for (int k0 = 0; k0 < INSTANCES; ++k0) {
            int k = (k0 + r) % INSTANCES;
            std::vector<double> us;
            for (int i = 0; i < STEPS; ++i) {
                double t0 = now_us();
                step(pairs[k], s, 3);
                CK(cudaStreamSynchronize(s));
                us.push_back(now_us() - t0);
            }
            if (r > 0) med[k].push_back(median(us));
        }
    }
    printf("whole step eagerly, one stream, %d pairs of pinned buffers (median us):", INSTANCES);
    for (int k = 0; k < INSTANCES; ++k) printf(" %.1f", median(med[k]));
    printf("\n");
    return 0;
}
