// Plain CUDA C++ baseline of ordo-bench's group `streams`: the same kernels (defined here, launched
// by both sides), streams, events and measuring loops as ordo's side, in C++.
//
// (a) A matrix multiplication C = A B (n x n, row-major, float) split into `chunks` row blocks,
//     chunk i on stream i % streams, all streams held behind a gate kernel on a root stream so
//     that the GPU time from the gate's end to the last chunk's end excludes the host's enqueuing.
// (b) Two chunks on two streams, each block stamping %globaltimer at its start and end, to measure
//     how much two streams' kernels overlap, at 256 and at 128 threads a block.
// (c) A one-block kernel's latency (event to event on its own stream) while a queue of large
//     kernels runs on another stream, on a stream of high and of normal priority.
#include <cuda_runtime.h>
#include <stdint.h>

#include <chrono>

namespace {

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One ROWS x 16 tile of C a block (blockDim 16 x ROWS), rows from `row0`; A's tile ROWS x 16 and
// B's 16 x 16 through shared memory. With `stamps`, thread (0, 0) writes the block's start and end
// (%globaltimer, ns) to stamps[2 b], stamps[2 b + 1], b the block's linear index.
template <int ROWS>
__device__ void matmul_tile(const float* a, const float* b, float* c, int n, int row0, unsigned long long* stamps) {
    __shared__ float as[ROWS][16];
    __shared__ float bs[16][17];
    const unsigned long long t0 = globaltimer();
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = row0 + blockIdx.y * ROWS + ty;
    const int col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += 16) {
        as[ty][tx] = a[(size_t)row * n + k0 + tx];
        for (int r = ty; r < 16; r += ROWS) bs[r][tx] = b[(size_t)(k0 + r) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) acc = fmaf(as[ty][k], bs[k][tx], acc);
        __syncthreads();
    }
    c[(size_t)row * n + col] = acc;
    if (stamps != nullptr && tx == 0 && ty == 0) {
        const size_t block = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
        stamps[2 * block] = t0;
        stamps[2 * block + 1] = globaltimer();
    }
}

}  // namespace

extern "C" {

// 16 x 16 = 256 threads a block.
__global__ void bl_streams_matmul256(const float* a, const float* b, float* c, int n, int row0,
                                     unsigned long long* stamps) {
    matmul_tile<16>(a, b, c, n, row0, stamps);
}

// 16 x 8 = 128 threads a block.
__global__ void bl_streams_matmul128(const float* a, const float* b, float* c, int n, int row0,
                                     unsigned long long* stamps) {
    matmul_tile<8>(a, b, c, n, row0, stamps);
}

// Every thread spins `ns` of %globaltimer: one block of it is the gate; a grid of 8 blocks of 256
// threads an SM is a large kernel that holds every SM for `ns` a wave.
__global__ void bl_streams_spin(unsigned long long ns) {
    const unsigned long long t0 = globaltimer();
    while (globaltimer() - t0 < ns) {
    }
}

// The small kernel of (c): one block writes one value.
__global__ void bl_streams_small(int* out) {
    if (threadIdx.x == 0) *out = 1;
}

}  // extern "C"

namespace {

constexpr int kMaxStreams = 16;

struct Streams {
    cudaStream_t root = nullptr;
    cudaStream_t s[kMaxStreams] = {};
    cudaEvent_t join[kMaxStreams] = {};
    cudaEvent_t start = nullptr, end = nullptr;
    cudaStream_t high = nullptr, normal = nullptr, hog = nullptr;
};

// The grid of one chunk of `rows` rows at ROWS rows a block.
dim3 grid_of(int n, int rows, int rows_per_block) { return dim3(n / 16, rows / rows_per_block); }

}  // namespace

extern "C" {

void* bl_streams_open() {
    Streams* h = new Streams;
    int least = 0, greatest = 0;
    bool ok = cudaStreamCreateWithFlags(&h->root, cudaStreamNonBlocking) == cudaSuccess &&
              cudaEventCreate(&h->start) == cudaSuccess && cudaEventCreate(&h->end) == cudaSuccess &&
              cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess &&
              cudaStreamCreateWithPriority(&h->high, cudaStreamNonBlocking, greatest) == cudaSuccess &&
              cudaStreamCreateWithPriority(&h->normal, cudaStreamNonBlocking, least) == cudaSuccess &&
              cudaStreamCreateWithPriority(&h->hog, cudaStreamNonBlocking, least) == cudaSuccess;
    for (int i = 0; ok && i < kMaxStreams; ++i) {
        ok = cudaStreamCreateWithFlags(&h->s[i], cudaStreamNonBlocking) == cudaSuccess &&
             cudaEventCreateWithFlags(&h->join[i], cudaEventDisableTiming) == cudaSuccess;
    }
    if (!ok) {
        cudaGetLastError();
        return nullptr;  // what was made leaks: the bench then reports no baseline
    }
    return h;
}

void bl_streams_close(void* p) {
    Streams* h = static_cast<Streams*>(p);
    if (h == nullptr) return;
    cudaDeviceSynchronize();
    for (int i = 0; i < kMaxStreams; ++i) {
        cudaStreamDestroy(h->s[i]);
        cudaEventDestroy(h->join[i]);
    }
    cudaStreamDestroy(h->root);
    cudaStreamDestroy(h->high);
    cudaStreamDestroy(h->normal);
    cudaStreamDestroy(h->hog);
    cudaEventDestroy(h->start);
    cudaEventDestroy(h->end);
    delete h;
}

// (a): GPU milliseconds of `chunks` chunks over `streams` streams behind a gate of `gate_ns`;
// `submit_us` gets the host's time a launch for the chunks' launches alone. -1 on a CUDA error.
double bl_streams_matmul_ms(void* p, const float* a, const float* b, float* c, int n, int chunks, int streams,
                            unsigned long long gate_ns, double* submit_us) {
    Streams* h = static_cast<Streams*>(p);
    const int rows = n / chunks;
    bl_streams_spin<<<1, 32, 0, h->root>>>(gate_ns);
    cudaEventRecord(h->start, h->root);
    for (int i = 0; i < streams; ++i) cudaStreamWaitEvent(h->s[i], h->start, 0);
    const dim3 grid = grid_of(n, rows, 16), block(16, 16);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < chunks; ++i) {
        bl_streams_matmul256<<<grid, block, 0, h->s[i % streams]>>>(a, b, c, n, i * rows, nullptr);
    }
    const auto t1 = std::chrono::steady_clock::now();
    *submit_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / chunks;
    for (int i = 0; i < streams; ++i) {
        cudaEventRecord(h->join[i], h->s[i]);
        cudaStreamWaitEvent(h->root, h->join[i], 0);
    }
    cudaEventRecord(h->end, h->root);
    float ms = 0;
    if (cudaEventSynchronize(h->end) != cudaSuccess || cudaEventElapsedTime(&ms, h->start, h->end) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return ms;
}

// (b): chunk 0 on stream 0 and chunk 1 on stream 1, both behind a gate, `threads` (256 or 128) a
// block; each block's stamps go to stamps0 / stamps1 (2 a block). 0, or -1 on a CUDA error.
int bl_streams_pair(void* p, const float* a, const float* b, float* c, int n, int rows, int threads,
                    unsigned long long gate_ns, unsigned long long* stamps0, unsigned long long* stamps1) {
    Streams* h = static_cast<Streams*>(p);
    const int per_block = threads == 128 ? 8 : 16;
    const dim3 grid = grid_of(n, rows, per_block), block(16, per_block);
    bl_streams_spin<<<1, 32, 0, h->root>>>(gate_ns);
    cudaEventRecord(h->start, h->root);
    for (int i = 0; i < 2; ++i) cudaStreamWaitEvent(h->s[i], h->start, 0);
    unsigned long long* stamps[2] = {stamps0, stamps1};
    for (int i = 0; i < 2; ++i) {
        if (threads == 128) {
            bl_streams_matmul128<<<grid, block, 0, h->s[i]>>>(a, b, c, n, i * rows, stamps[i]);
        } else {
            bl_streams_matmul256<<<grid, block, 0, h->s[i]>>>(a, b, c, n, i * rows, stamps[i]);
        }
    }
    for (int i = 0; i < 2; ++i) {
        cudaEventRecord(h->join[i], h->s[i]);
        cudaStreamWaitEvent(h->root, h->join[i], 0);
    }
    if (cudaStreamSynchronize(h->root) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

// (c): microseconds from an event before the small kernel to one after it, on the high- or
// normal-priority stream, launched `delay_us` after `hog_kernels` large kernels (grid `hog_blocks`
// of 256 threads, each spinning `hog_ns`) were queued on a normal-priority stream.
double bl_streams_priority_us(void* p, int high, int hog_kernels, unsigned hog_blocks, unsigned long long hog_ns,
                              double delay_us, int* out) {
    Streams* h = static_cast<Streams*>(p);
    cudaStream_t small = high ? h->high : h->normal;
    for (int i = 0; i < hog_kernels; ++i) bl_streams_spin<<<hog_blocks, 256, 0, h->hog>>>(hog_ns);
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() < delay_us) {
    }
    cudaEventRecord(h->start, small);
    bl_streams_small<<<1, 32, 0, small>>>(out);
    cudaEventRecord(h->end, small);
    float ms = 0;
    const bool ok = cudaEventSynchronize(h->end) == cudaSuccess &&
                    cudaEventElapsedTime(&ms, h->start, h->end) == cudaSuccess &&
                    cudaStreamSynchronize(h->hog) == cudaSuccess;
    if (!ok) {
        cudaGetLastError();
        return -1;
    }
    return ms * 1e3;
}

}  // extern "C"
