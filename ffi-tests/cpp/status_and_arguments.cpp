// A C++ program against ordo's C ABI: version and status information, and the documented status
// for each kind of bad argument. Runs with or without a driver.
#include "ordo.h"
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {
int fails = 0;
void expect(const char* what, ordo_status got, ordo_status want) {
    if (got != want) {
        std::printf("FAIL %s: got %d (%s), expected %d (%s)\n", what, got, ordo_status_name(got), want, ordo_status_name(want));
        ++fails;
    }
}
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
CUstream_st* const legacy = reinterpret_cast<CUstream_st*>(0x1);
ordo_status nop_capture(CUstream_st*, size_t, void*) { return ORDO_SUCCESS; }
}  // namespace

extern "C" int ffi_status_and_arguments_main(int driver_present) {
    fails = 0;
#ifdef ORDO_TEST_EXPECTED_VERSION
    // The crate's version, passed by build.rs from Cargo (the workspace's version, ordo's too).
    expect_true("version string", std::strcmp(ordo_version(), ORDO_TEST_EXPECTED_VERSION) == 0);
#else
    unsigned major = 0, minor = 0, patch = 0;
    expect_true("version string", std::sscanf(ordo_version(), "%u.%u.%u", &major, &minor, &patch) == 3);
#endif
    expect_true("version number", ordo_version_number() == ORDO_VERSION_NUMBER);
    expect_true("cuda version", ordo_cuda_version() >= 12000);
    int rt = 0;
    expect("runtime version", ordo_runtime_version(&rt), ORDO_SUCCESS);
    expect_true("runtime equals build version", rt == ordo_cuda_version());
    expect("runtime version NULL", ordo_runtime_version(nullptr), ORDO_ERROR_INVALID_ARGUMENT);

    expect_true("name of -2", std::strcmp(ordo_status_name(ORDO_ERROR_PAGEABLE_MEMORY), "ORDO_ERROR_PAGEABLE_MEMORY") == 0);
    expect_true("name of 35", std::strcmp(ordo_status_name(35), "cudaErrorInsufficientDriver") == 0);
    expect_true("name of 700", std::strcmp(ordo_status_name(700), "cudaErrorIllegalAddress") == 0);
    expect_true("string of 0", std::strlen(ordo_status_string(0)) > 0);
    expect_true("unknown status", std::strcmp(ordo_status_name(-50), "ORDO_UNKNOWN_STATUS") == 0);
    expect_true("700 sticky", ordo_status_is_sticky(700) == 1);
    expect_true("1 not sticky", ordo_status_is_sticky(1) == 0);
    expect_true("-1 not sticky", ordo_status_is_sticky(ORDO_ERROR_INVALID_ARGUMENT) == 0);

    float f = 0;
    uint8_t b = 0;
    // A NULL stream is refused (the legacy stream is never used by accident).
    expect("gemv NULL stream", ordo_gemv_normalize(nullptr, &f, &f, &f, 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    // NULL pointers and impossible sizes are refused before CUDA is called.
    expect("gemv NULL a", ordo_gemv_normalize(legacy, nullptr, &f, &f, 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    // The thread's last error says more than the status.
    ordo_error_info info;
    info.size = sizeof info;
    expect("last error", ordo_last_error(&info), ORDO_SUCCESS);
    expect("last error status", info.status, ORDO_ERROR_INVALID_ARGUMENT);
    expect_true("last error message", std::strstr(info.message, "ordo_gemv_normalize(a): null pointer") != nullptr);
    expect_true("last error call names the export and the argument", std::strcmp(info.call, "ordo_gemv_normalize(a)") == 0);
    char small[8];
    expect_true("last error message length", ordo_last_error_message(small, sizeof small) == std::strlen(info.message));
    expect_true("last error message truncated", std::strlen(small) == 7);
    info.size = sizeof info - 1;
    expect("last error, an older struct", ordo_last_error(&info), ORDO_ERROR_INVALID_ARGUMENT);
    // A misaligned float pointer would fault on the device (sticky): refused here.
    alignas(8) unsigned char raw[64] = {};
    float* misaligned = reinterpret_cast<float*>(raw + 1);
    expect("gemv misaligned y", ordo_gemv_normalize(legacy, &f, &f, misaligned, 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain misaligned a", ordo_pdl_chain(legacy, misaligned, &f, &f, 1, 1, 0), ORDO_ERROR_INVALID_ARGUMENT);
    expect("gemv overflow", ordo_gemv_normalize(legacy, &f, &f, &f, SIZE_MAX, 2), ORDO_ERROR_INVALID_ARGUMENT);
    expect("frame NULL out", ordo_frame_filter(legacy, &b, nullptr, 4, 4), ORDO_ERROR_INVALID_ARGUMENT);
    expect("frame overflow", ordo_frame_filter(legacy, &b, &b, SIZE_MAX, SIZE_MAX), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain bad pdl", ordo_pdl_chain(legacy, &f, &f, &f, 1, 1, 7), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain NULL scale", ordo_pdl_chain(legacy, &f, &f, nullptr, 1, 1, 0), ORDO_ERROR_INVALID_ARGUMENT);
    expect("pipeline NULL host_in", ordo_pipeline_run(legacy, nullptr, &f, &f, &f, 1, 1, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect("pipeline zero n", ordo_pipeline_run(legacy, &f, &f, &f, &f, 0, 1, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    // Sizes whose byte count overflows are refused before anything reaches CUDA.
    expect("pipeline n * 4 overflows", ordo_pipeline_run(legacy, &f, &f, &f, &f, SIZE_MAX / 2, 1, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect("pipeline zero chunks", ordo_pipeline_run(legacy, &f, &f, &f, &f, 4, 0, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect("pipeline more chunks than elements", ordo_pipeline_run(legacy, &f, &f, &f, &f, 4, 5, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain n * 4 overflows", ordo_pdl_chain(legacy, &f, &f, &f, SIZE_MAX / 2, 1, 0), ORDO_ERROR_INVALID_ARGUMENT);
    ordo_staging_ring* no_ring = nullptr;
    expect("ring slots * bytes overflows", ordo_staging_ring_create(SIZE_MAX / 2, 4, &no_ring), ORDO_ERROR_INVALID_ARGUMENT);
    // Sizes the kernels' 32-bit indexing cannot take, chains of zero or absurdly many steps and
    // overlapping buffers, rings of absurdly many slots: refused before CUDA.
    expect("gemv 2^26 + 1 rows", ordo_gemv_normalize(legacy, &f, &f, &f, (size_t(1) << 26) + 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    expect("gemv 2^31 - 31 cols", ordo_gemv_normalize(legacy, &f, &f, &f, 1, (size_t(1) << 31) - 31), ORDO_ERROR_INVALID_ARGUMENT);
    expect("gemv zero rows", ordo_gemv_normalize(legacy, &f, &f, &f, 0, 4), ORDO_ERROR_INVALID_ARGUMENT);
    alignas(16) float buf[64] = {};
    expect("chain zero steps", ordo_pdl_chain(legacy, buf, buf + 16, buf + 32, 16, 0, 0), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain 2^24 + 1 steps", ordo_pdl_chain(legacy, buf, buf + 16, buf + 32, 16, (size_t(1) << 24) + 1, 0), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain scale inside a", ordo_pdl_chain(legacy, buf, buf + 16, buf + 8, 16, 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain scale inside b", ordo_pdl_chain(legacy, buf, buf + 16, buf + 31, 16, 1, 1), ORDO_ERROR_INVALID_ARGUMENT);
    expect("chain a and b overlap", ordo_pdl_chain(legacy, buf, buf + 1, buf + 32, 16, 1, 0), ORDO_ERROR_INVALID_ARGUMENT);
    expect("ring 65537 slots", ordo_staging_ring_create(65537, 1, &no_ring), ORDO_ERROR_INVALID_ARGUMENT);
    expect("ring 2^40 slots", ordo_staging_ring_create(size_t(1) << 40, 1, &no_ring), ORDO_ERROR_INVALID_ARGUMENT);
    expect_true("no ring written on a refusal", no_ring == nullptr);
    expect("ring release NULL", ordo_staging_ring_release(nullptr, 1), ORDO_ERROR_INVALID_HANDLE);

    ordo_graph_cache* cache = nullptr;
    size_t bad_buckets[] = {4, 2};
    expect("cache NULL body", ordo_graph_cache_create(nullptr, 0, 0, nullptr, nullptr, &cache), ORDO_ERROR_INVALID_ARGUMENT);
    expect("cache NULL out", ordo_graph_cache_create(nullptr, 0, 0, nop_capture, nullptr, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect("cache decreasing buckets", ordo_graph_cache_create(bad_buckets, 2, 0, nop_capture, nullptr, &cache), ORDO_ERROR_INVALID_ARGUMENT);
    // Buckets are checked before they are read: NULL with a count, misaligned, a count whose
    // byte size overflows.
    expect("cache NULL buckets with a count", ordo_graph_cache_create(nullptr, 3, 0, nop_capture, nullptr, &cache), ORDO_ERROR_INVALID_ARGUMENT);
    alignas(8) unsigned char bucket_bytes[64] = {};
    const size_t* misaligned_buckets = reinterpret_cast<const size_t*>(bucket_bytes + 4);
    expect("cache misaligned buckets", ordo_graph_cache_create(misaligned_buckets, 2, 0, nop_capture, nullptr, &cache), ORDO_ERROR_INVALID_ARGUMENT);
    size_t good_buckets[] = {2, 8, 32};
    expect("cache bucket count overflows", ordo_graph_cache_create(good_buckets, SIZE_MAX / 4, 0, nop_capture, nullptr, &cache), ORDO_ERROR_INVALID_ARGUMENT);
    expect_true("no handle written on failure", cache == nullptr);
    expect("cache run NULL", ordo_graph_cache_run(nullptr, legacy, 1, nullptr), ORDO_ERROR_INVALID_HANDLE);

    // Handles: wrong kind, forged, stale, destroyed twice. No handle is ever dereferenced.
    expect("cache create", ordo_graph_cache_create(good_buckets, 3, 0, nop_capture, nullptr, &cache), ORDO_SUCCESS);
    float ms = 0;
    expect("timer from a cache", ordo_timer_elapsed_ms(reinterpret_cast<ordo_timer*>(cache), &ms), ORDO_ERROR_INVALID_HANDLE);
    expect("timer start from a cache", ordo_timer_start(reinterpret_cast<ordo_timer*>(cache), legacy), ORDO_ERROR_INVALID_HANDLE);
    alignas(8) uint64_t zeros[8] = {};
    expect("cache from zeros", ordo_graph_cache_run(reinterpret_cast<ordo_graph_cache*>(zeros), legacy, 1, nullptr), ORDO_ERROR_INVALID_HANDLE);
    expect("ring from a cache", ordo_staging_ring_submit(reinterpret_cast<ordo_staging_ring*>(cache), 0, 1, &f, legacy), ORDO_ERROR_INVALID_HANDLE);
    void* slot = nullptr;
    size_t ticket = 0;
    expect("ring acquire from a cache", ordo_staging_ring_acquire(reinterpret_cast<ordo_staging_ring*>(cache), 0, &slot, &ticket), ORDO_ERROR_INVALID_HANDLE);
    expect("ring release from a cache", ordo_staging_ring_release(reinterpret_cast<ordo_staging_ring*>(cache), 1), ORDO_ERROR_INVALID_HANDLE);
    ordo_timer_destroy(reinterpret_cast<ordo_timer*>(cache));  // another kind: ignored, the cache lives on
    ordo_staging_ring_destroy(reinterpret_cast<ordo_staging_ring*>(cache));
    ordo_graph_cache_destroy(reinterpret_cast<ordo_graph_cache*>(zeros));  // not a handle: ignored
    ordo_graph_cache_destroy(nullptr);
    expect("cache still live after wrong-kind destroys", ordo_graph_cache_run(cache, nullptr, 1, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    ordo_graph_cache* stale = cache;
    ordo_graph_cache_destroy(cache);
    expect("stale cache run", ordo_graph_cache_run(stale, legacy, 1, nullptr), ORDO_ERROR_INVALID_HANDLE);
    expect("stale cache capture_all", ordo_graph_cache_capture_all(stale, legacy), ORDO_ERROR_INVALID_HANDLE);
    ordo_graph_cache_destroy(stale);  // destroyed twice: ignored
    ordo_graph_cache* fresh = nullptr;
    expect("cache create again", ordo_graph_cache_create(nullptr, 0, 0, nop_capture, nullptr, &fresh), ORDO_SUCCESS);
    expect_true("a new handle never equals a destroyed one", fresh != stale);
    expect("stale cache after a new one", ordo_graph_cache_run(stale, legacy, 1, nullptr), ORDO_ERROR_INVALID_HANDLE);
    cache = fresh;
    expect("ring zero slots", ordo_staging_ring_create(0, 16, nullptr), ORDO_ERROR_INVALID_ARGUMENT);
    expect_true("names of the handle statuses",
                std::strcmp(ordo_status_name(ORDO_ERROR_INVALID_HANDLE), "ORDO_ERROR_INVALID_HANDLE") == 0 &&
                    std::strcmp(ordo_status_name(ORDO_ERROR_STREAM_CAPTURING), "ORDO_ERROR_STREAM_CAPTURING") == 0 &&
                    std::strcmp(ordo_status_name(ORDO_ERROR_HANDLE_BUSY), "ORDO_ERROR_HANDLE_BUSY") == 0 &&
                    std::strcmp(ordo_status_name(ORDO_ERROR_INVALID_TICKET), "ORDO_ERROR_INVALID_TICKET") == 0);

    ordo_timer* t = nullptr;
    ordo_status created = ordo_timer_create(&t);
    if (!driver_present) {
        // CUDA's own status comes back unchanged through the C API.
        expect("timer without a driver", created, 35);
        expect("cache run without a driver", ordo_graph_cache_run(cache, legacy, 3, nullptr), 35);
        ordo_staging_ring* r = nullptr;
        expect("ring without a driver", ordo_staging_ring_create(2, 64, &r), 35);
    } else {
        expect("timer create", created, ORDO_SUCCESS);
        expect("elapsed before any record", ordo_timer_elapsed_ms(t, &ms), ORDO_ERROR_INVALID_ARGUMENT);
        expect("cache as a timer's elapsed", ordo_timer_elapsed_ms(reinterpret_cast<ordo_timer*>(cache), &ms), ORDO_ERROR_INVALID_HANDLE);
        expect("timer as a cache", ordo_graph_cache_run(reinterpret_cast<ordo_graph_cache*>(t), legacy, 1, nullptr), ORDO_ERROR_INVALID_HANDLE);
        ordo_timer* stale_timer = t;
        ordo_timer_destroy(t);
        expect("stale timer start", ordo_timer_start(stale_timer, legacy), ORDO_ERROR_INVALID_HANDLE);
        expect("stale timer elapsed", ordo_timer_elapsed_ms(stale_timer, &ms), ORDO_ERROR_INVALID_HANDLE);
        ordo_timer_destroy(stale_timer);
    }
    ordo_graph_cache_destroy(cache);
    return fails;
}
