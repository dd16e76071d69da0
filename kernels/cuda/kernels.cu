// ordo's kernels: the ones from the source articles, each checked against a CPU reference in
// kernels/tests. Every kernel is extern "C" so Rust can name its host stub, and named ordok_*: the
// ordo_* names belong to the C ABI alone (scripts/package.sh keeps only those global).
#include <cooperative_groups.h>
#include <stdint.h>
#include "ordo/graph.cuh"
#include "ordo/pdl.cuh"

extern "C" {

__global__ void ordok_empty() {}

// x[i] += 1
__global__ void ordok_add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// 64 dependent fused multiply-adds per element: enough arithmetic to be worth overlapping with copies.
__global__ void ordok_heavy(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        #pragma unroll 8
        for (int k = 0; k < 64; ++k) v = fmaf(v, 0.999f, 0.001f);
        x[i] = v;
    }
}

// out[i] = heavy(in[i]): the 64-step loop from one buffer into another.
__global__ void ordok_heavy_into(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
        #pragma unroll 8
        for (int k = 0; k < 64; ++k) v = fmaf(v, 0.999f, 0.001f);
        out[i] = v;
    }
}

// out[i] = in[i]^2
__global__ void ordok_square(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

// y = A x, A row-major rows x cols: one warp per row.
__global__ void ordok_gemv(const float* a, const float* x, float* y, int rows, int cols) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= rows) return;
    const float* row = a + (size_t)warp * cols;
    float acc = 0.0f;
    for (int j = lane; j < cols; j += 32) acc = fmaf(row[j], x[j], acc);
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[warp] = acc;
}

// *sum_sq += sum of y[i]^2 (block reduction, one atomic per block). *sum_sq starts at 0.
__global__ void ordok_sum_squares(const float* y, float* sum_sq, int n) {
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

// y[i] /= sqrt(*sum_sq) (y unchanged when the norm is zero)
__global__ void ordok_normalize(float* y, const float* sum_sq, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = *sum_sq;
    if (i < n && s > 0.0f) y[i] = y[i] * rsqrtf(s);
}

// y[i] /= sqrt(sum of y[j]^2) for n <= blockDim.x (one block, one element a thread, n <= 1024):
// the sum stays in shared memory, so no temporary, no memset and one kernel where the general
// path (ordok_sum_squares, ordok_normalize) needs a 4-byte temporary and three operations. y is
// unchanged when its norm is zero. Launch exactly one block, its size a whole number of warps, with
// 1 <= n <= blockDim.x <= 1024 (the shuffles take every lane; a second block would scale y again).
__global__ void ordok_normalize_block(float* y, int n) {
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

// Interleaved RGB (3 bytes a pixel) to grayscale floats: 0.299 R + 0.587 G + 0.114 B.
__global__ void ordok_grayscale(const uint8_t* rgb, float* gray, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    size_t p = (size_t)y * width + x;
    float r = rgb[3 * p], g = rgb[3 * p + 1], b = rgb[3 * p + 2];
    gray[p] = fmaf(0.114f, b, fmaf(0.587f, g, 0.299f * r));
}

// 5x5 Gaussian blur (binomial weights 1 4 6 4 1, /256) with clamped edges, rounded to bytes.
__global__ void ordok_blur5(const float* gray, uint8_t* out, int width, int height) {
    const float w[5] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float acc = 0.0f;
    for (int dy = -2; dy <= 2; ++dy) {
        int yy = min(max(y + dy, 0), height - 1);
        float row = 0.0f;
        for (int dx = -2; dx <= 2; ++dx) {
            int xx = min(max(x + dx, 0), width - 1);
            row = fmaf(w[dx + 2], gray[(size_t)yy * width + xx], row);
        }
        acc = fmaf(w[dy + 2], row, acc);
    }
    float v = acc * (1.0f / 256.0f);
    out[(size_t)y * width + x] = (uint8_t)fminf(fmaxf(rintf(v), 0.0f), 255.0f);
}

}  // extern "C"

// A vertical box blur of radius `radius`, then a horizontal 2x downsample, over the rows of one
// chunk of a stencil pipeline: `in` holds before + rows + after rows of `width` values (its row
// `before` is output row 0), `out` rows x (width / 2) floats:
//   out[r][c] = mean over dr in [-radius, radius] of (in[rr][2c] + in[rr][2c + 1]) / 2,
// rr = r + dr clamped to the rows of the view (-before .. rows - 1 + after). Where the pipeline's
// halo is at least `radius`, that is the frame's own clamp. Each operation is rounded on its own
// (__fadd_rn, __fmul_rn, __fdiv_rn: nvcc contracts none of them into an fma), so a CPU reference
// of the same operations matches bit for bit. 2 * radius + 1 fits in an int (the launcher checks).
template <class T>
__device__ __forceinline__ void ordok_blur_rows_downsample_body(const T* in, float* out, int width, int rows,
                                                                int before, int after, int radius) {
    const int half = width / 2;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c >= half || r >= rows) return;
    float acc = 0.0f;
    for (int dr = -radius; dr <= radius; ++dr) {
        const long long rr = min(max((long long)r + dr, -(long long)before), (long long)rows - 1 + after);
        const T* row = in + (size_t)(rr + before) * width;
        acc = __fadd_rn(acc, __fmul_rn(__fadd_rn((float)row[2 * c], (float)row[2 * c + 1]), 0.5f));
    }
    out[(size_t)r * half + c] = __fdiv_rn(acc, (float)(2 * radius + 1));
}

extern "C" {

__global__ void ordok_blur_rows_downsample_f32(const float* in, float* out, int width, int rows, int before,
                                               int after, int radius) {
    ordok_blur_rows_downsample_body(in, out, width, rows, before, after, radius);
}

__global__ void ordok_blur_rows_downsample_u8(const uint8_t* in, float* out, int width, int rows, int before,
                                              int after, int radius) {
    ordok_blur_rows_downsample_body(in, out, width, rows, before, after, radius);
}

}  // extern "C"

// One step of a dependent chain: out[i] = prev[i] * scale[i] + 1, as a grid-stride loop (correct
// over any grid: the full one-element-a-thread grid or one wave). Compiled twice by
// ORDO_PDL_KERNELS: ordok_chain_step (plain, no griddepcontrol instruction) and
// ordok_chain_step_pdl. The PDL form triggers at its start (the next kernel may begin launching:
// best in grids of at most one wave, the only grids ordo's rule gives it), loads its first
// scale[i] before the wait (overlapping the previous kernel's tail), and reads prev after it.
// Loading scale early is right only where nothing the kernel may overlap writes scale: inside a
// chain, whose steps never write it, and whose first kernel ordo_kernels::chain launches without
// the PDL attribute (its predecessor, whatever the caller enqueued, may have written scale; since
// a step that triggers at its start lets the next step launch before its own wait, only a first
// kernel that starts after its predecessor completed keeps every later prologue after it).
// Indices are unsigned: i < n <= 2^31 - 1 and a stride of at most 2^31 threads never wrap.
template <class Pdl>
__device__ __forceinline__ void ordok_chain_step_body(const float* prev, float* out, const float* scale, int n) {
    const unsigned count = (unsigned)n;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    Pdl::trigger();
    float s = i < count ? scale[i] : 0.0f;
    Pdl::wait();
    if (i < count) out[i] = fmaf(prev[i], s, 1.0f);
    for (i += stride; i < count; i += stride) out[i] = fmaf(prev[i], scale[i], 1.0f);
}
ORDO_PDL_KERNELS(ordok_chain_step, (const float* prev, float* out, const float* scale, int n), (prev, out, scale, n))

extern "C" {

// The sum of x[0..n) into *out, in one cooperative launch: each block sums a grid-stride share into
// partial[blockIdx.x], the grid synchronises (cooperative_groups::this_grid().sync(), which needs
// every block resident at once: a cooperative launch), and block 0 adds the partials in order.
// blockDim.x must be a power of two up to 1024.
__global__ void ordok_grid_sum(const float* x, float* partial, float* out, int n) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    __shared__ float s[1024];
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x) acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float total = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];
        *out = total;
    }
}

// Fault injection for tests: writes 1 at base[offset]. An offset far outside any allocation makes
// an illegal-address fault, a sticky error.
__global__ void ordok_write_at(float* base, long long offset) {
    if (blockIdx.x == 0 && threadIdx.x == 0) base[offset] = 1.0f;
}

// One step of a counted loop in a graph's WHILE node: *counter -= 1 (left at 0 when already 0), and
// the loop's condition set to 0 once it reaches 0. Launched with one thread (one writer of the
// condition).
__global__ void ordok_countdown(ordo_conditional_handle loop, unsigned int* counter) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned int left = *counter;
        if (left > 0) {
            left -= 1;
            *counter = left;
        }
        if (left == 0) ordo_set_condition(loop, 0);
    }
}

// Sets the condition of `node` to *value, from one thread (the single writer of the condition).
// Serves every kind of conditional node: IF runs its body (IF/ELSE its first body) when the value
// is non-zero and IF/ELSE its second when it is zero, WHILE loops while it is non-zero, SWITCH runs
// body *value (none when *value is its number of cases or more).
__global__ void ordok_set_condition_from(ordo_conditional_handle node, const unsigned int* value) {
    if (blockIdx.x == 0 && threadIdx.x == 0) ordo_set_condition(node, *value);
}

// x[i] = x[i] * a + b, rounded once (fmaf): a step that tells which conditional body ran.
__global__ void ordok_scale_add(float* x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaf(x[i], a, b);
}

}  // extern "C"
