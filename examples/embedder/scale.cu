// The embedder's own kernel, the same for both apps: y = a * x + y over n elements. extern "C", so
// that Rust names its host stub (ordo) and the driver finds it by name in the fatbin (cudarc).
extern "C" __global__ void scale_add(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
