// What cudaDeviceReset does to the context's identity, and what the driver's error log holds, under
// the runtime this program is linked with (build it once with each toolkit): plain CUDA C++, no ordo.
//
//   nvcc -O2 -o reset_and_logs reset_and_logs.cu   (static runtime), then ./reset_and_logs
//
// Prints, before and after a cudaDeviceReset (immediately, and after the next runtime call
// re-initialises the device): the current context's handle and unique id (cuCtxGetId), whether the
// primary context is active, the default pool's handle, and what CUDA says of a pointer allocated
// before the reset (its buffer id: unique in the process). Then provokes two failures the driver
// logs (cuLogsDumpToMemory with a NULL buffer; a read-only access grant for a device pool) and
// prints the driver's whole log buffer with this thread's kernel id and the process id.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <sys/syscall.h>

template <typename F> static F get(const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &q) != cudaSuccess || q != cudaDriverEntryPointSuccess) return nullptr;
    return reinterpret_cast<F>(p);
}

typedef CUresult (*CtxGetCurrent)(CUcontext*);
typedef CUresult (*CtxGetId)(CUcontext, unsigned long long*);
typedef CUresult (*PrimaryState)(CUdevice, unsigned*, int*);
typedef CUresult (*PtrAttr)(void*, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*LogsCurrent)(unsigned*, unsigned);
typedef CUresult (*LogsDump)(unsigned*, char*, size_t*, unsigned);

static void state(const char* when, void* p) {
    static auto cur = get<CtxGetCurrent>("cuCtxGetCurrent");
    static auto id = get<CtxGetId>("cuCtxGetId");
    static auto prim = get<PrimaryState>("cuDevicePrimaryCtxGetState");
    static auto attr = get<PtrAttr>("cuPointerGetAttribute");
    CUcontext c = nullptr;
    int rc = cur ? cur(&c) : -1;
    unsigned long long cid = 0;
    int rid = (id && c) ? id(c, &cid) : -1;
    unsigned flags = 0; int active = -1;
    int rp = prim ? prim(0, &flags, &active) : -1;
    unsigned long long buf = 0;
    int rb = attr ? attr(&buf, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)p) : -1;
    cudaPointerAttributes pa; memset(&pa, 0, sizeof pa);
    cudaError_t ra = cudaPointerGetAttributes(&pa, p);
    cudaGetLastError();
    printf("%-34s ctx %p (rc %d) id %llu (rc %d) primary active %d (rc %d) buffer id %llu (rc %d) runtime type %d (rc %d)\n",
           when, (void*)c, rc, cid, rid, active, rp, buf, rb, (int)pa.type, (int)ra);
}

int main() {
    cudaSetDevice(0);
    cudaFree(0);
    void* p = nullptr;
    cudaMalloc(&p, 1 << 20);
    cudaMemPool_t def = nullptr, def2 = nullptr;
    cudaDeviceGetDefaultMemPool(&def, 0);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt); cudaDriverGetVersion(&drv);
    printf("runtime %d, driver %d\n", rt, drv);
    state("before the reset", p);
    printf("cudaDeviceReset: %d\n", (int)cudaDeviceReset());
    state("right after the reset", p);
    cudaFree(0);
    state("after the next runtime call", p);
    cudaDeviceGetDefaultMemPool(&def2, 0);
    printf("default pool %p before, %p after\n", (void*)def, (void*)def2);
    void* q = nullptr;
    cudaMalloc(&q, 1 << 20);
    state("a new allocation", q);

    auto current = get<LogsCurrent>("cuLogsCurrent");
    auto dump = get<LogsDump>("cuLogsDumpToMemory");
    printf("cuLogsCurrent %p, cuLogsDumpToMemory %p; tid %ld pid %d\n", (void*)current, (void*)dump,
           (long)syscall(SYS_gettid), (int)getpid());
    if (current && dump) {
        unsigned it = 0;
        printf("cuLogsCurrent: %d (iterator %u)\n", (int)current(&it, 0), it);
        size_t size = 64;
        printf("provoked cuLogsDumpToMemory(NULL): %d\n", (int)dump(nullptr, nullptr, &size, 0));
        cudaMemPool_t pool = nullptr;
        cudaDeviceGetDefaultMemPool(&pool, 0);
        cudaMemAccessDesc d; memset(&d, 0, sizeof d);
        d.location.type = cudaMemLocationTypeDevice;
        d.flags = cudaMemAccessFlagsProtRead;
        printf("provoked cudaMemPoolSetAccess(read-only, own device): %d\n", (int)cudaMemPoolSetAccess(pool, &d, 1));
        cudaGetLastError();
        static char buf[32768];
        size = sizeof buf;
        int r = dump(nullptr, buf, &size, 0);
        printf("cuLogsDumpToMemory(all): %d, %zu bytes:\n%.*s\n--- end of log\n", r, size, (int)size, buf);
        size = sizeof buf;
        r = dump(&it, buf, &size, 0);
        printf("cuLogsDumpToMemory(since iterator): %d, %zu bytes, iterator now %u:\n%.*s\n--- end\n", r, size, it, (int)size, buf);
    }
    return 0;
}
