// The program's own kernel and ordo's gemv_normalize and PDL chain on the program's own stream.
#include "ordo.h"
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__global__ void fill(float* x, int n, float base) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = base + 0.001f * (i % 997);
}

int main() {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    const int rows = 512, cols = 256;
    float *a, *x, *y;
    cudaMallocAsync((void**)&a, rows * cols * 4, s);
    cudaMallocAsync((void**)&x, cols * 4, s);
    cudaMallocAsync((void**)&y, rows * 4, s);
    fill<<<(rows * cols + 255) / 256, 256, 0, s>>>(a, rows * cols, 0.5f);
    fill<<<1, 256, 0, s>>>(x, cols, -0.25f);
    ordo_status st = ordo_gemv_normalize(s, a, x, y, rows, cols);
    if (st != ORDO_SUCCESS) {
        std::printf("ordo_gemv_normalize: %s (%s)\n", ordo_status_name(st), ordo_status_string(st));
        return 1;
    }
    std::vector<float> hy(rows);
    cudaMemcpyAsync(hy.data(), y, rows * 4, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    double norm = 0;
    for (float v : hy) norm += (double)v * v;
    std::printf("ordo %s (CUDA %d) from a CMake C++ program: |y| = %.6f after gemv_normalize\n", ordo_version(), ordo_cuda_version(), std::sqrt(norm));
    cudaFreeAsync(a, s);
    cudaFreeAsync(x, s);
    cudaFreeAsync(y, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    return std::fabs(std::sqrt(norm) - 1.0) < 1e-4 ? 0 : 1;
}
