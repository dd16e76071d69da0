// A decode step in plain CUDA C++, as a C++ engineer writes it, for ordo-bench's group `decode`:
// the same work as the ordo side (benches/benches/ordo-bench/decode.rs), with the measurement
// loops in C++ so no Rust runs inside them.
//
// The step for `batch` rows of `hidden` floats, on the caller's stream:
//   1. the input copied in (pinned host to device);
//   2. three dependent element-wise kernels out = prev * scale + 1 (the chain-step kind), written
//      without PDL: no griddepcontrol instruction, one element a thread (an eager variant, not
//      the baseline, launches instead the PDL launches ordo's plan makes: see `step`);
//   3. y = A w with A the third kernel's output viewed as batch x hidden (one warp a row), then y
//      scaled to unit length in one block (the sum of squares in shared memory, no temporary), as
//      ordo's gemv_normalize does up to 1024 rows. The form before that (a sum of squares into a
//      4-byte temporary allocated ONCE, at open, zeroed with cudaMemsetAsync each step, then the
//      scaling: three operations) is kept as a variant, with the temporary allocated in the step
//      as another;
//   4. y and the hidden state copied out (device to pinned host).
// The bucket graphs are captured by hand: one capture and instantiation a bucket. The buffers are the
// ordo side's (bl_decode_open), so both sides copy from and to the same memory.
//
// Also the user's own kernel for the ordo side (bl_user_step, bl_user_step_pdl): the same
// element-wise body compiled in ordo's two forms (ordo/pdl.cuh), which ordo's PDL rule picks from,
// as a user's .cu file does.
#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>
#include <vector>
#include "ordo/pdl.cuh"

// The user's kernel for the ordo side: ordo's two forms of one grid-stride body.
template <class Pdl>
__device__ __forceinline__ void bl_user_step_body(const float* prev, float* out, const float* scale, int n) {
    const unsigned count = (unsigned)n;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    Pdl::trigger();
    float s = i < count ? scale[i] : 0.0f;
    Pdl::wait();
    if (i < count) out[i] = fmaf(prev[i], s, 1.0f);
    for (i += stride; i < count; i += stride) out[i] = fmaf(prev[i], scale[i], 1.0f);
}
ORDO_PDL_KERNELS(bl_user_step, (const float* prev, float* out, const float* scale, int n), (prev, out, scale, n))

namespace {

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The C++ side's kernels: the same arithmetic as ordo's (kernels/cuda/kernels.cu), written plainly.
__global__ void dec_step(const float* prev, float* out, const float* scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(prev[i], scale[i], 1.0f);
}

__global__ void dec_gemv(const float* a, const float* x, float* y, int rows, int cols) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= rows) return;
    const float* row = a + (size_t)warp * cols;
    float acc = 0.0f;
    for (int j = lane; j < cols; j += 32) acc = fmaf(row[j], x[j], acc);
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[warp] = acc;
}

__global__ void dec_sum_squares(const float* y, float* sum_sq, int n) {
    __shared__ float warp_sums[32];
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc = fmaf(y[i], y[i], acc);
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(sum_sq, acc);
    }
}

// The same arithmetic as ordo's ordok_normalize_block: n <= blockDim.x, one element a thread.
__global__ void dec_normalize_block(float* y, int n) {
    __shared__ float warp_sums[32];
    __shared__ float total;
    const int i = threadIdx.x;
    const float v = i < n ? y[i] : 0.0f;
    float acc = v * v;
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) total = acc;
    }
    __syncthreads();
    const float s = total;
    if (i < n && s > 0.0f) y[i] = v * rsqrtf(s);
}

__global__ void dec_normalize(float* y, const float* sum_sq, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = *sum_sq;
    if (i < n && s > 0.0f) y[i] = y[i] * rsqrtf(s);
}

struct Decode {
    int hidden = 0, max_batch = 0;
    float *h_x = nullptr, *h_y = nullptr, *h_t = nullptr;
    float *d_x = nullptr, *d_a = nullptr, *d_b = nullptr, *d_scale = nullptr, *d_w = nullptr, *d_y = nullptr;
    float* d_sum = nullptr;  // the three-operation form's temporary, allocated once
    std::vector<int> buckets;
    std::vector<cudaGraphExec_t> execs;
};

// How the step normalises y: in one block (ordo's form up to 1024 rows; the default), or in three
// operations through a 4-byte temporary (a sum of squares, then the scaling) allocated once at open
// or allocated and freed in the step (cudaMallocAsync / cudaFreeAsync, the device's current pool).
enum Norm { NORM_BLOCK = 0, NORM_TEMP_ONCE = 1, NORM_TEMP_IN_STEP = 2 };

// The step for `batch` rows on `s`, y normalised as `norm` says. pdl_grid 0: the three
// element-wise kernels are dec_step, one element a thread, launched with <<<>>>. Otherwise they
// are the PDL form of the user's kernel (bl_user_step_pdl, grid-stride) over `pdl_grid` blocks,
// launched with cudaLaunchKernelEx, the second and third with the programmatic-serialization
// attribute: the launches ordo's PDL plan makes, written by hand (not a baseline: it tells what
// PDL itself costs or gives in this step).
void step(Decode* d, cudaStream_t s, int batch, int norm, unsigned pdl_grid = 0) {
    const int n = batch * d->hidden;
    cudaMemcpyAsync(d->d_x, d->h_x, (size_t)n * 4, cudaMemcpyHostToDevice, s);
    if (pdl_grid == 0) {
        const unsigned grid = (unsigned)((n + 255) / 256);
        dec_step<<<grid, 256, 0, s>>>(d->d_x, d->d_a, d->d_scale, n);
        dec_step<<<grid, 256, 0, s>>>(d->d_a, d->d_b, d->d_scale, n);
        dec_step<<<grid, 256, 0, s>>>(d->d_b, d->d_a, d->d_scale, n);
    } else {
        cudaLaunchAttribute attr[1] = {};
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(pdl_grid);
        cfg.blockDim = dim3(256);
        cfg.stream = s;
        cudaLaunchKernelEx(&cfg, bl_user_step_pdl, (const float*)d->d_x, d->d_a, (const float*)d->d_scale, n);
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cudaLaunchKernelEx(&cfg, bl_user_step_pdl, (const float*)d->d_a, d->d_b, (const float*)d->d_scale, n);
        cudaLaunchKernelEx(&cfg, bl_user_step_pdl, (const float*)d->d_b, d->d_a, (const float*)d->d_scale, n);
    }
    dec_gemv<<<(unsigned)((batch + 7) / 8), 256, 0, s>>>(d->d_a, d->d_w, d->d_y, batch, d->hidden);
    if (norm == NORM_BLOCK && batch <= 1024) {
        dec_normalize_block<<<1, (unsigned)((batch + 31) / 32 * 32), 0, s>>>(d->d_y, batch);
    } else {
        float* sum = d->d_sum;
        if (norm == NORM_TEMP_IN_STEP) cudaMallocAsync((void**)&sum, 4, s);
        cudaMemsetAsync(sum, 0, 4, s);
        dec_sum_squares<<<(unsigned)std::min((batch + 255) / 256, 1024), 256, 0, s>>>(d->d_y, sum, batch);
        dec_normalize<<<(unsigned)((batch + 255) / 256), 256, 0, s>>>(d->d_y, sum, batch);
        if (norm == NORM_TEMP_IN_STEP) cudaFreeAsync(sum, s);
    }
    cudaMemcpyAsync(d->h_y, d->d_y, (size_t)batch * 4, cudaMemcpyDeviceToHost, s);
    cudaMemcpyAsync(d->h_t, d->d_a, (size_t)n * 4, cudaMemcpyDeviceToHost, s);
}

void destroy_execs(Decode* d) {
    for (cudaGraphExec_t e : d->execs)
        if (e) cudaGraphExecDestroy(e);
    d->execs.clear();
}

double median(std::vector<double>& v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

}  // namespace

extern "C" {

void bl_decode_close(void* handle);

// The C++ side, bound to the caller's buffers for batches up to max_batch of `hidden` floats: the
// same pinned input (h_x, max_batch * hidden floats) and outputs (h_y: max_batch, h_t: max_batch *
// hidden), and the same device buffers (d_x, d_a, d_b and d_scale: max_batch * hidden; d_w: hidden;
// d_y: max_batch) as the ordo side, so that both sides copy from and to the same pinned pages and
// device memory, and the buffers are no difference between the sides. Allocates only the
// three-operation form's temporary. NULL on failure.
void* bl_decode_open(int hidden, int max_batch, float* h_x, float* h_y, float* h_t, float* d_x, float* d_a,
                     float* d_b, const float* d_scale, const float* d_w, float* d_y) {
    Decode* d = new Decode;
    d->hidden = hidden;
    d->max_batch = max_batch;
    d->h_x = h_x;
    d->h_y = h_y;
    d->h_t = h_t;
    d->d_x = d_x;
    d->d_a = d_a;
    d->d_b = d_b;
    d->d_scale = const_cast<float*>(d_scale);
    d->d_w = const_cast<float*>(d_w);
    d->d_y = d_y;
    float* sum = nullptr;
    if (cudaMalloc((void**)&sum, 4) != cudaSuccess) {
        bl_decode_close(d);
        return nullptr;
    }
    d->d_sum = sum;
    return d;
}

// Destroys the handle's graphs and its temporary; the caller's buffers are the caller's.
void bl_decode_close(void* handle) {
    Decode* d = static_cast<Decode*>(handle);
    if (!d) return;
    destroy_execs(d);
    if (d->d_sum) cudaFree(d->d_sum);
    delete d;
}

// `steps` eager steps of `batch` rows on `s`, each timed on the host from its first call to the
// return of cudaStreamSynchronize; the median, microseconds. norm: a Norm (how y is normalised).
// pdl_grid: 0 for the plain step, else the PDL launches over that grid (see `step`).
double bl_decode_eager_us(void* handle, cudaStream_t s, int batch, int steps, int norm, unsigned pdl_grid) {
    Decode* d = static_cast<Decode*>(handle);
    std::vector<double> us;
    us.reserve(steps);
    cudaStreamSynchronize(s);
    for (int i = 0; i < steps; ++i) {
        double t0 = now_us();
        step(d, s, batch, norm, pdl_grid);
        cudaStreamSynchronize(s);
        us.push_back(now_us() - t0);
    }
    // A refused call (a launch configuration the device rejects, say) is no time.
    if (cudaGetLastError() != cudaSuccess) return -1.0;
    return median(us);
}

// Captures one graph for each of the `count` buckets (from the largest to the smallest, as ordo's
// graph cache does) on `s` in global mode, the previous ones destroyed first (not timed). mode:
// bit 0, each graph uploaded after its instantiation (cudaGraphUpload, as ordo's cache does with
// CacheOptions::upload); bit 1, y normalised in three operations through a temporary allocated
// inside each captured step (an allocation and a free node, as ordo's gemv_normalize captures over
// 1024 rows). Returns the host microseconds from the first capture to the return of
// a cudaStreamSynchronize after the last; parts[0..3]: microseconds in capture (begin to end),
// instantiation and upload calls, summed over the buckets. The graphs stay for bl_decode_replay_us.
double bl_decode_capture_us(void* handle, cudaStream_t s, const int* buckets, int count, int mode, double* parts) {
    Decode* d = static_cast<Decode*>(handle);
    cudaStreamSynchronize(s);
    destroy_execs(d);
    d->buckets.assign(buckets, buckets + count);
    d->execs.assign(count, nullptr);
    parts[0] = parts[1] = parts[2] = 0.0;
    double start = now_us();
    for (int k = count - 1; k >= 0; --k) {
        double t0 = now_us();
        cudaGraph_t g = nullptr;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        step(d, s, buckets[k], (mode & 2) ? NORM_TEMP_IN_STEP : NORM_BLOCK);
        cudaStreamEndCapture(s, &g);
        double t1 = now_us();
        cudaGraphInstantiate(&d->execs[k], g, 0);
        double t2 = now_us();
        if (mode & 1) cudaGraphUpload(d->execs[k], s);
        double t3 = now_us();
        cudaGraphDestroy(g);
        parts[0] += t1 - t0;
        parts[1] += t2 - t1;
        parts[2] += t3 - t2;
    }
    cudaStreamSynchronize(s);
    return now_us() - start;
}

// `steps` replays of the graph of bucket `batch` (one of the last bl_decode_capture_us's buckets),
// each timed on the host from cudaGraphLaunch to the return of cudaStreamSynchronize; the median,
// microseconds. -1 when `batch` is not a bucket.
double bl_decode_replay_us(void* handle, cudaStream_t s, int batch, int steps) {
    Decode* d = static_cast<Decode*>(handle);
    int k = -1;
    for (size_t i = 0; i < d->buckets.size(); ++i)
        if (d->buckets[i] == batch) k = (int)i;
    if (k < 0 || !d->execs[k]) return -1.0;
    std::vector<double> us;
    us.reserve(steps);
    cudaStreamSynchronize(s);
    for (int i = 0; i < steps; ++i) {
        double t0 = now_us();
        cudaGraphLaunch(d->execs[k], s);
        cudaStreamSynchronize(s);
        us.push_back(now_us() - t0);
    }
    return median(us);
}


}  // extern "C"
