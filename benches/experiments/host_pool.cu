// What does a host-located memory pool need for its copies to run at the pinned rate? A standalone
// experiment, not part of the build: plain CUDA C++ (CUDA 13.0 headers and driver), so that no ordo
// code is inside what it measures.
//
//   nvcc -O2 -arch=sm_90 -o host_pool benches/experiments/host_pool.cu
//   ./host_pool [rounds]
//
// A naive pool (cudaMemPoolCreate, location cudaMemLocationTypeHost, pinned) gave 8.4 GB/s H2D on an
// H200 against 55 GB/s from cudaHostAlloc memory (ordo's docs/cuda-behaviours.md, CB-14). CUDA's documentation of cudaMemPoolCreate says a
// host pool's memory is accessible from the host CPU by default, and CCCL's pinned pool grants every
// device access with cudaMemPoolSetAccess: the likely cause is the missing grant (the copy engine
// then takes the staged path, as for pageable memory at 9.8 GB/s). The variants, side by side:
//   hostalloc        cudaHostAlloc memory (the reference)
//   host             pool, location host, no access grant (the naive pool)
//   host+access      pool, location host, cudaMemPoolSetAccess(device, read-write)
//   numa+access      pool, location host NUMA node of the device (cudaDevAttrHostNumaId), access granted
//   default+access   the device's default pinned host pool (cudaMemGetDefaultMemPool(host, pinned)),
//                    access granted
//   registered       malloc memory, cudaHostRegister (another reference)
// Each buffer is 64 MiB, allocated once and warmed by one copy; H2D and D2H are timed between two
// events, in interleaved rounds, medians in GB/s. Also printed: the pool's reported access
// (cudaMemPoolGetAccess), the pointer's memory type (cudaPointerGetAttributes), and what a
// cudaMallocFromPoolAsync + cudaFreeAsync pair costs warm (1 MiB and 64 MiB) against cudaHostAlloc +
// cudaFreeHost. Look for: which variants reach the hostalloc rate. ordo's HostPool uses host+access;
// if only numa+access gets there, switch HostPoolOptions::default() to HostLocation::NearDevice.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const size_t BYTES = 64u << 20;

struct Variant {
    std::string name;
    void* host = nullptr;
    cudaMemPool_t pool = nullptr;  // when the memory came from a pool
    std::vector<double> h2d, d2h;
};

static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static double copy_gbps(void* dst, const void* src, cudaStream_t s, cudaEvent_t a, cudaEvent_t b) {
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dst, src, BYTES, cudaMemcpyDefault, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return BYTES / (ms * 1e6);
}

static cudaMemPool_t make_pool(cudaMemLocationType type, int id, int device, bool access) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = type;
    props.location.id = id;
    cudaMemPool_t pool = nullptr;
    cudaError_t e = cudaMemPoolCreate(&pool, &props);
    if (e != cudaSuccess) {
        printf("cudaMemPoolCreate(type %d, id %d): %s\n", (int)type, id, cudaGetErrorString(e));
        cudaGetLastError();
        return nullptr;
    }
    unsigned long long keep = ~0ull;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    if (access) {
        cudaMemAccessDesc desc = {};
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = device;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        CK(cudaMemPoolSetAccess(pool, &desc, 1));
    }
    return pool;
}

static void describe(const Variant& v, int device) {
    cudaPointerAttributes attr = {};
    CK(cudaPointerGetAttributes(&attr, v.host));
    printf("%-16s memory type %d (1 host, 2 device, 3 managed), device pointer %s", v.name.c_str(), (int)attr.type,
           attr.devicePointer == v.host ? "= host pointer" : (attr.devicePointer ? "differs" : "none"));
    if (v.pool) {
        cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
        cudaMemLocation loc = {};
        loc.type = cudaMemLocationTypeDevice;
        loc.id = device;
        CK(cudaMemPoolGetAccess(&flags, v.pool, &loc));
        printf(", device access %d (0 none, 1 read, 3 read-write)", (int)flags);
    }
    printf("\n");
}

static double alloc_free_us(cudaMemPool_t pool, size_t bytes, cudaStream_t s, int iters) {
    void* p = nullptr;
    CK(cudaMallocFromPoolAsync(&p, bytes, pool, s));  // warm
    CK(cudaFreeAsync(p, s));
    CK(cudaStreamSynchronize(s));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
        CK(cudaMallocFromPoolAsync(&p, bytes, pool, s));
        CK(cudaFreeAsync(p, s));
    }
    CK(cudaStreamSynchronize(s));
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

static double hostalloc_us(size_t bytes, int iters) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
        void* p = nullptr;
        CK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
        CK(cudaFreeHost(p));
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    int device = 0, driver = 0, runtime = 0, numa = -1;
    CK(cudaSetDevice(device));
    CK(cudaDriverGetVersion(&driver));
    CK(cudaRuntimeGetVersion(&runtime));
    CK(cudaDeviceGetAttribute(&numa, cudaDevAttrHostNumaId, device));
    printf("driver %d, runtime %d, host NUMA node of device %d: %d\n", driver, runtime, device, numa);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    void* dev = nullptr;
    CK(cudaMalloc(&dev, BYTES));

    std::vector<Variant> vs;
    {
        Variant v;
        v.name = "hostalloc";
        CK(cudaHostAlloc(&v.host, BYTES, cudaHostAllocDefault));
        vs.push_back(v);
    }
    auto from_pool = [&](const char* name, cudaMemPool_t pool) {
        if (!pool) return;
        Variant v;
        v.name = name;
        v.pool = pool;
        CK(cudaMallocFromPoolAsync(&v.host, BYTES, pool, s));
        CK(cudaStreamSynchronize(s));
        vs.push_back(v);
    };
    from_pool("host", make_pool(cudaMemLocationTypeHost, 0, device, false));
    from_pool("host+access", make_pool(cudaMemLocationTypeHost, 0, device, true));
    if (numa >= 0) from_pool("numa+access", make_pool(cudaMemLocationTypeHostNuma, numa, device, true));
    {
        cudaMemPool_t pool = nullptr;
        cudaMemLocation loc = {};
        loc.type = cudaMemLocationTypeHost;
        loc.id = 0;
        cudaError_t e = cudaMemGetDefaultMemPool(&pool, &loc, cudaMemAllocationTypePinned);
        if (e == cudaSuccess) {
            cudaMemAccessDesc desc = {};
            desc.location.type = cudaMemLocationTypeDevice;
            desc.location.id = device;
            desc.flags = cudaMemAccessFlagsProtReadWrite;
            e = cudaMemPoolSetAccess(pool, &desc, 1);
            if (e == cudaSuccess) {
                from_pool("default+access", pool);
            } else {
                printf("cudaMemPoolSetAccess on the default host pool: %s\n", cudaGetErrorString(e));
                cudaGetLastError();
            }
        } else {
            printf("cudaMemGetDefaultMemPool(host, pinned): %s\n", cudaGetErrorString(e));
            cudaGetLastError();
        }
    }
    {
        Variant v;
        v.name = "registered";
        v.host = malloc(BYTES);
        CK(cudaHostRegister(v.host, BYTES, cudaHostRegisterDefault));
        vs.push_back(v);
    }
    for (auto& v : vs) {
        memset(v.host, 1, BYTES);
        describe(v, device);
        copy_gbps(dev, v.host, s, a, b);  // warm
    }
    for (int r = 0; r < rounds; ++r) {
        for (size_t k = 0; k < vs.size(); ++k) {
            Variant& v = vs[r % 2 ? vs.size() - 1 - k : k];
            v.h2d.push_back(copy_gbps(dev, v.host, s, a, b));
            v.d2h.push_back(copy_gbps(v.host, dev, s, a, b));
        }
    }
    printf("\n%-16s %10s %10s   (medians of %d rounds, 64 MiB)\n", "variant", "H2D GB/s", "D2H GB/s", rounds);
    for (auto& v : vs) printf("%-16s %10.1f %10.1f\n", v.name.c_str(), median(v.h2d), median(v.d2h));

    cudaMemPool_t pool = nullptr;
    for (auto& v : vs)
        if (v.name == "host+access") pool = v.pool;
    if (pool) {
        printf("\nallocate + free, warm pool (host+access) against cudaHostAlloc + cudaFreeHost:\n");
        for (size_t bytes : {size_t(1) << 20, size_t(64) << 20}) {
            printf("%4zu MiB: pool %9.2f us, cudaHostAlloc+cudaFreeHost %9.1f us\n", bytes >> 20,
                   alloc_free_us(pool, bytes, s, 200), hostalloc_us(bytes, bytes > (1u << 20) ? 5 : 50));
        }
    }
    return 0;
}
