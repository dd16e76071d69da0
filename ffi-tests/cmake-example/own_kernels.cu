// A CUDA C++ program that launches its own kernels through ordo, built in every way a program links
// ordo (scripts/cpp-package-test.sh builds and runs it): libordo.a with nvcc's static CUDA runtime;
// libordo.so with nvcc's default static runtime, which puts two copies of the CUDA runtime in the
// process (the program's, with its kernels registered, and libcudart.so, which libordo.so loads);
// libordo.so with -cudart shared; and CMake's defaults with ordo::ordo and ordo::ordo_shared.
//
// It launches its kernels through ordo_launch_kernel (the C call, which ordo.h routes with this
// file's cudaGetKernel) and ordo::launch, with attributes and cooperatively, as their cudaKernel_t,
// first through the plain export, and plans a chain of a kernel in two forms with ordo_pdl_plan_launch and ordo::pdl_plan; every
// result is checked against the CPU, bit for bit (nonzero data; the same fused multiply-adds).
//
// Exit status: 0 every check passed; 1 a check failed; 77 no CUDA device (nothing launched), which
// the script accepts only on a machine without a GPU. Built with -DORDO_NO_KERNEL_RESOLVER (the
// plain calls, as before ordo.h routed them), it is the script's control: with libordo.so and the
// static runtime it must fail on a GPU.
#include <cuda_runtime.h>

#include "ordo.hpp"
#include "ordo/pdl.cuh"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

int checks = 0;
int fails = 0;

void expect(const char* what, bool ok) {
    ++checks;
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}

void expect_status(const char* what, ordo_status st) {
    if (st != ORDO_SUCCESS) std::printf("     %s: %s (%s)\n", what, ordo_status_name(st), ordo_status_string(st));
    expect(what, st == ORDO_SUCCESS);
}

// y = a * x + b, grid-stride (any grid is correct).
__global__ void axpb(const float* x, float* y, float a, float b, int n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        y[i] = fmaf(a, x[i], b);
}

// The same as axpb; launched only as its cudaKernel_t.
__global__ void axpb_twin(const float* x, float* y, float a, float b, int n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        y[i] = fmaf(a, x[i], b);
}

// x += k; launched first through the plain export (no resolver).
__global__ void add(float* x, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += k;
}

}  // namespace

// A kernel in two forms (plain and PDL) for ordo's PDL rule, grid-stride: x = x * 0.5 + 1.
template <class Pdl>
__device__ __forceinline__ void halve_body(float* x, int n) {
    Pdl::trigger();
    Pdl::wait();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        x[i] = fmaf(x[i], 0.5f, 1.0f);
}
ORDO_PDL_KERNELS(halve, (float* x, int n), (x, n))

namespace {

// Copies of the CUDA runtime in this process: 1 where the shared one is not loaded (libordo.a and
// the static runtime) or is the program's own (it knows the program's kernels: -cudart shared);
// 2 where libordo.so loaded it beside the program's static copy. Asked on a device only.
int cuda_runtimes() {
    char name[32];
    std::snprintf(name, sizeof name, "libcudart.so.%d", CUDART_VERSION / 1000);
    void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return 1;
    using get_kernel_fn = cudaError_t (*)(cudaKernel_t*, const void*);
    using get_last_error_fn = cudaError_t (*)();
    auto get_kernel = reinterpret_cast<get_kernel_fn>(dlsym(lib, "cudaGetKernel"));
    auto get_last_error = reinterpret_cast<get_last_error_fn>(dlsym(lib, "cudaGetLastError"));
    int copies = 2;
    cudaKernel_t k = nullptr;
    if (get_kernel != nullptr && get_kernel(&k, reinterpret_cast<const void*>(axpb)) == cudaSuccess) copies = 1;
    if (get_last_error != nullptr) get_last_error();
    dlclose(lib);
    return copies;
}

std::vector<float> download(const float* d, size_t n, cudaStream_t s) {
    std::vector<float> h(n);
    cudaMemcpyAsync(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    return h;
}

bool equal(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i]) {
            std::printf("     element %zu: %.9g, the CPU says %.9g\n", i, got[i], want[i]);
            return false;
        }
    }
    return true;
}

int run(cudaStream_t s, int runtimes) {
    const int n = (1 << 20) + 3;
    std::vector<float> hx(n);
    for (int i = 0; i < n; ++i) hx[i] = 0.25f + 0.001f * (i % 1013);
    float *x = nullptr, *y = nullptr;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    // On the stream: a pageable cudaMemcpy may return before its copy has reached the device.
    cudaMemcpyAsync(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice, s);
    const unsigned blocks = (n + 255) / 256;
    auto axpb_cpu = [&](float a, float b) {
        std::vector<float> want(n);
        for (int i = 0; i < n; ++i) want[i] = std::fmaf(a, hx[i], b);
        return want;
    };
    float a = 1.5f, b = -0.75f;
    int nn = n;
    void* args[] = {&x, &y, &a, &b, &nn};
    ordo_launch_config c = ordo::launch_config(blocks, 256);

    // 1. The C call (routed by ordo.h) with the kernel's address.
    cudaMemsetAsync(y, 0, n * sizeof(float), s);
    expect_status("ordo_launch_kernel, the program's kernel", ordo_launch_kernel(s, (const void*)axpb, args, &c));
    expect("ordo_launch_kernel: y = a x + b", equal(download(y, n, s), axpb_cpu(a, b)));

    // 2. ordo.hpp, typed.
    cudaMemsetAsync(y, 0, n * sizeof(float), s);
    try {
        ordo::launch(s, axpb, c, x, y, 2.0f, 0.5f, n);
        expect("ordo::launch: y = a x + b", equal(download(y, n, s), axpb_cpu(2.0f, 0.5f)));
    } catch (const ordo::error& e) {
        std::printf("     ordo::launch: %s\n", e.what());
        expect("ordo::launch", false);
    }

    // 3. With attributes (a priority) and cooperatively (8 blocks, grid-stride): the launch's general
    // path, and the cooperative check's occupancy query on the kernel.
    ordo_launch_config with_priority = c;
    with_priority.has_priority = 1;
    cudaMemsetAsync(y, 0, n * sizeof(float), s);
    expect_status("ordo_launch_kernel with a priority", ordo_launch_kernel(s, (const void*)axpb, args, &with_priority));
    expect("with a priority: y = a x + b", equal(download(y, n, s), axpb_cpu(a, b)));
    ordo_launch_config cooperative = ordo::launch_config(8, 256);
    cooperative.cooperative = 1;
    cudaMemsetAsync(y, 0, n * sizeof(float), s);
    expect_status("ordo_launch_kernel, cooperative", ordo_launch_kernel(s, (const void*)axpb, args, &cooperative));
    expect("cooperative: y = a x + b", equal(download(y, n, s), axpb_cpu(a, b)));

    // 4. Kernels as their cudaKernel_t, from this program's runtime, routed and through the plain
    // export: axpb's (ordo holds it since the launches above) and axpb_twin's (new to ordo: the
    // routed call asks this runtime's cudaGetKernel about a handle, which is no stub, and must
    // leave no error behind in this runtime).
    cudaKernel_t handle = nullptr, twin = nullptr;
    expect("cudaGetKernel", cudaGetKernel(&handle, axpb) == cudaSuccess && handle != nullptr);
    expect("cudaGetKernel, the twin", cudaGetKernel(&twin, axpb_twin) == cudaSuccess && twin != nullptr);
    for (cudaKernel_t k : {twin, handle}) {
        const bool is_twin = k == twin;
        cudaMemsetAsync(y, 0, n * sizeof(float), s);
        expect_status(is_twin ? "ordo_launch_kernel, a new cudaKernel_t" : "ordo_launch_kernel, a known cudaKernel_t",
                      ordo_launch_kernel(s, (const void*)k, args, &c));
        cudaError_t left = cudaPeekAtLastError();
        if (left != cudaSuccess) std::printf("     cudaPeekAtLastError: %s\n", cudaGetErrorName(left));
        expect("no error left in the program's runtime by the routed call", left == cudaSuccess);
        expect("a cudaKernel_t, routed: y = a x + b", equal(download(y, n, s), axpb_cpu(a, b)));
        cudaMemsetAsync(y, 0, n * sizeof(float), s);
        expect_status("(ordo_launch_kernel), a cudaKernel_t", (ordo_launch_kernel)(s, (const void*)k, args, &c));
        expect("a cudaKernel_t, the plain export: y = a x + b", equal(download(y, n, s), axpb_cpu(a, b)));
    }

    // 5. A kernel launched first through the plain export, (ordo_launch_kernel): with one runtime
    // it works; with two, ordo has not seen the kernel and its runtime does not know it (printed).
    // Then through the routed call, which must work, and the plain export again, which then finds
    // the kernel's handle.
    std::vector<float> want_add = hx;
    float k1 = 1.0f, k2 = 2.0f, k4 = 4.0f;
    void* add1[] = {&x, &k1, &nn};
    void* add2[] = {&x, &k2, &nn};
    void* add4[] = {&x, &k4, &nn};
    ordo_status plain_first = (ordo_launch_kernel)(s, (const void*)add, add1, &c);
    std::printf("own_kernels: a new kernel through the plain export, before any routed call: %s\n",
                ordo_status_name(plain_first));
    if (runtimes == 1) expect_status("the plain export, one runtime", plain_first);
    if (plain_first == ORDO_SUCCESS)
        for (float& v : want_add) v += 1.0f;
    expect_status("ordo_launch_kernel after the plain export", ordo_launch_kernel(s, (const void*)add, add2, &c));
    expect_status("(ordo_launch_kernel) after the routed call", (ordo_launch_kernel)(s, (const void*)add, add4, &c));
    for (float& v : want_add) v = (v + 2.0f) + 4.0f;
    expect("add: x + 2 + 4", equal(download(x, n, s), want_add));

    // 6. ordo's PDL rule for the program's kernel in two forms, through C and ordo.hpp, and a chain
    // of ten launches of the planned form, within one wave and beyond it.
    int device = 0;
    cudaGetDevice(&device);
    for (size_t m : {size_t(4096), size_t(1) << 22}) {
        ordo_pdl_plan plan{};
        plan.size = sizeof plan;
        expect_status("ordo_pdl_plan_launch",
                      ordo_pdl_plan_launch((const void*)halve, (const void*)halve_pdl, device, m, 256, ORDO_PDL_AUTO, &plan));
        float* z = nullptr;
        cudaMalloc(&z, m * sizeof(float));
        std::vector<float> hz(m);
        for (size_t i = 0; i < m; ++i) hz[i] = 0.75f + 0.125f * (i % 89);
        cudaMemcpyAsync(z, hz.data(), m * sizeof(float), cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
        try {
            ordo_pdl_plan typed = ordo::pdl_plan(halve, halve_pdl, device, m, 256);
            expect("ordo::pdl_plan = ordo_pdl_plan_launch", typed.use_pdl_form == plan.use_pdl_form && typed.grid == plan.grid &&
                                                              typed.one_wave_blocks == plan.one_wave_blocks);
            expect("a plan of at least one block", plan.grid > 0 && plan.one_wave_blocks > 0);
            for (int k = 0; k < 10; ++k) {
                ordo_launch_config step = ordo::launch_config(plan.grid, 256);
                step.pdl = plan.use_pdl_form && k > 0;
                ordo::launch(s, plan.use_pdl_form ? halve_pdl : halve, step, z, (int)m);
            }
            for (float& v : hz)
                for (int k = 0; k < 10; ++k) v = std::fmaf(v, 0.5f, 1.0f);
            std::printf("own_kernels: %zu elements: PDL form %d over %u of %u blocks (one wave %u)\n", m,
                        plan.use_pdl_form, plan.grid, plan.full_blocks, plan.one_wave_blocks);
            expect("a chain of the planned form", equal(download(z, m, s), hz));
        } catch (const ordo::error& e) {
            std::printf("     ordo::pdl_plan / ordo::launch: %s\n", e.what());
            expect("ordo::pdl_plan and a chain", false);
        }
        cudaFree(z);
    }

    // 7. The host cost of a launch through the routed call beside <<<>>>, for the record.
    ordo_launch_config one = ordo::launch_config(1, 32);
    int one_n = 32;
    void* small[] = {&x, &y, &a, &b, &one_n};
    double us[2] = {0, 0};
    int refused = 0;
    for (int round = 0; round < 4; ++round) {
        for (int way = 0; way < 2; ++way) {
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 2000; ++i) {
                if (way == 0) refused += ordo_launch_kernel(s, (const void*)axpb, small, &one) != ORDO_SUCCESS;
                else axpb<<<1, 32, 0, s>>>(x, y, a, b, one_n);
            }
            us[way] += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 8000;
            cudaStreamSynchronize(s);
        }
    }
    std::printf("own_kernels: host submit a launch: ordo_launch_kernel %.2f us, <<<>>> %.2f us\n", us[0], us[1]);
    expect("8000 launches through ordo_launch_kernel", refused == 0);

    expect("cudaStreamSynchronize", cudaStreamSynchronize(s) == cudaSuccess);
    // The resolver left no failure as this runtime's last error.
    cudaError_t last = cudaGetLastError();
    if (last != cudaSuccess) std::printf("     cudaGetLastError: %s\n", cudaGetErrorName(last));
    expect("no error left in the program's runtime", last == cudaSuccess);
    cudaFree(x);
    cudaFree(y);
    return fails;
}

}  // namespace

int main() {
    if (ordo_version_number() != ORDO_VERSION_NUMBER) {
        std::printf("own_kernels: ordo.h is %d, the library %d\n", ORDO_VERSION_NUMBER, ordo_version_number());
        return 1;
    }
    char name[32];
    std::snprintf(name, sizeof name, "libcudart.so.%d", CUDART_VERSION / 1000);
    void* shared = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    std::printf("own_kernels: ordo %s; %s %s loaded%s\n", ordo_version(), name, shared ? "is" : "is not",
#ifdef ORDO_NO_KERNEL_RESOLVER
                "; built with ORDO_NO_KERNEL_RESOLVER (the control: plain calls)"
#else
                ""
#endif
    );
    if (shared) dlclose(shared);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        std::printf("own_kernels: no CUDA device (cudaGetDeviceCount: %s): nothing launched\n", cudaGetErrorName(e));
        return 77;
    }
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int runtimes = cuda_runtimes();
    std::printf("own_kernels: %d cop%s of the CUDA runtime in this process\n", runtimes, runtimes == 1 ? "y" : "ies");
    run(s, runtimes);
    cudaStreamDestroy(s);
    std::printf("own_kernels: %d checks, %d failed (%d CUDA runtime%s)\n", checks, fails, runtimes, runtimes == 1 ? "" : "s");
    return fails == 0 ? 0 : 1;
}
