// A C++17 program against ordo.hpp: the stream reference's compile-time rules, errors thrown with
// the thread's last error, RAII handles. Runs with or without a driver.
#include "ordo.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>

namespace {
int fails = 0;
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
// The legacy stream can only be named on purpose.
static_assert(!std::is_default_constructible_v<ordo::stream_ref>, "no default stream by accident");
static_assert(!std::is_constructible_v<ordo::stream_ref, int>, "not from 0");
static_assert(!std::is_constructible_v<ordo::stream_ref, std::nullptr_t>, "not from nullptr");
static_assert(std::is_constructible_v<ordo::stream_ref, CUstream_st*>, "from a cudaStream_t");
static_assert(!std::is_copy_constructible_v<ordo::timer> && std::is_nothrow_move_constructible_v<ordo::timer>);
static_assert(!std::is_copy_constructible_v<ordo::staging_ring> && !std::is_copy_constructible_v<ordo::graph_cache>);
static_assert(std::is_base_of_v<std::exception, ordo::error>);
}  // namespace

extern "C" int ffi_hpp_main(int driver_present) {
    fails = 0;
    expect_true("header and library versions", ordo::header_matches_library());
    const ordo::stream_ref legacy = ordo::stream_ref::legacy();
    expect_true("legacy stream value", legacy.get() == reinterpret_cast<CUstream_st*>(0x1));
    // A refused argument throws ordo::error with the detail of the thread's last error.
    float f = 0;
    try {
        ordo::gemv_normalize(legacy, nullptr, &f, &f, 1, 1);
        expect_true("gemv with a null matrix throws", false);
    } catch (const ordo::error& e) {
        expect_true("gemv status", e.status() == ORDO_ERROR_INVALID_ARGUMENT);
        expect_true("gemv message", std::strstr(e.what(), "ordo_gemv_normalize(a): null pointer") != nullptr);
        expect_true("gemv call", e.call() == "ordo_gemv_normalize(a)");
        expect_true("gemv not sticky", !e.sticky() && e.cuda_error() == 0);
    }
    // A null stream held in a variable is refused at run time, with an error about that stream:
    // the thread's last error (the gemv's, of the same status) is an earlier, unrelated failure.
    CUstream_st* none = nullptr;
    try {
        ordo::stream_ref s(none);
        (void)s;
        expect_true("a null stream_ref throws", false);
    } catch (const ordo::error& e) {
        expect_true("null stream_ref status", e.status() == ORDO_ERROR_INVALID_ARGUMENT);
        expect_true("null stream_ref call", e.call() == "ordo::stream_ref");
        expect_true("null stream_ref message", std::strstr(e.what(), "null stream") != nullptr);
        expect_true("null stream_ref is not the gemv's error", std::strstr(e.what(), "ordo_gemv_normalize") == nullptr);
    }
    // ordo::check: success and "not yet" are answers, not failures.
    expect_true("check success", ordo::check(ORDO_SUCCESS));
    expect_true("check not ready", !ordo::check(ORDO_NOT_READY));
    try {
        ordo::check(700);
        expect_true("check 700 throws", false);
    } catch (const ordo::error& e) {
        expect_true("700 is sticky", e.sticky() && e.status() == 700);
    }
    // Without a driver, making a timer fails with CUDA's code, thrown; with one, it works.
    try {
        ordo::timer t;
        ordo::timer moved(std::move(t));
        expect_true("timer with a driver", driver_present != 0 && moved.get() != nullptr && t.get() == nullptr);
    } catch (const ordo::error& e) {
        expect_true("timer without a driver", driver_present == 0 && e.cuda_error() == e.status() && e.status() > 0);
    }
    // A graph cache's bad arguments (decreasing buckets) throw before anything else.
    try {
        ordo::graph_cache c({4, 2}, false, [](ordo::stream_ref, size_t) {});
        expect_true("decreasing buckets throw", false);
    } catch (const ordo::error& e) {
        expect_true("bucket status", e.status() == ORDO_ERROR_INVALID_ARGUMENT);
    }
    // Options are checked: an unknown capture mode throws.
    try {
        ordo_graph_cache_options o{};
        o.capture_mode = 7;
        ordo::graph_cache c({1, 2}, o, [](ordo::stream_ref, size_t) {});
        expect_true("a bad capture mode throws", false);
    } catch (const ordo::error& e) {
        expect_true("capture mode status", e.status() == ORDO_ERROR_INVALID_ARGUMENT);
    }
    {
        ordo_graph_cache_options o{};
        o.capture_mode = ORDO_CAPTURE_THREAD_LOCAL;
        o.warmup = 1;
        ordo::graph_cache c({1, 2}, o, [](ordo::stream_ref, size_t) {});
        expect_true("a cache with options", c.get() != nullptr);
    }
    // The cache owns its body (through user_free): freed by a failed create, and by the destroy
    // when no call is running; a moved-from cache destroys nothing.
    {
        auto token = std::make_shared<int>(1);
        try {
            ordo_graph_cache_options o{};
            o.capture_mode = 7;
            ordo::graph_cache c({1}, o, [token](ordo::stream_ref, size_t) {});
            expect_true("a bad capture mode throws", false);
        } catch (const ordo::error&) {
        }
        expect_true("a failed create frees the body", token.use_count() == 1);
        {
            ordo::graph_cache c({1, 2}, false, [token](ordo::stream_ref, size_t) {});
            ordo::graph_cache moved(std::move(c));
            expect_true("the cache holds its body", token.use_count() == 2 && c.get() == nullptr);
        }
        expect_true("the destroy frees the body", token.use_count() == 1);
        ordo_graph_cache_options defaults = ORDO_GRAPH_CACHE_OPTIONS_INIT;
        expect_true("zeroed options are the defaults: thread-local", defaults.capture_mode == ORDO_CAPTURE_THREAD_LOCAL && ORDO_CAPTURE_THREAD_LOCAL == 0);
    }
    // Launch configurations are checked before CUDA: a zero grid, a NULL kernel.
    {
        ordo_launch_config c = ordo::launch_config(0, 256);
        expect_true("zero grid", ordo_launch_kernel(legacy.get(), reinterpret_cast<const void*>(&ffi_hpp_main), nullptr, &c) == ORDO_ERROR_INVALID_ARGUMENT);
        c = ordo::launch_config(1, 256);
        expect_true("null kernel", ordo_launch_kernel(legacy.get(), nullptr, nullptr, &c) == ORDO_ERROR_INVALID_ARGUMENT);
        c.size = 4;
        expect_true("old config size", ordo_launch_kernel(legacy.get(), reinterpret_cast<const void*>(&ffi_hpp_main), nullptr, &c) == ORDO_ERROR_INVALID_ARGUMENT);
        ordo_pdl_plan plan{};
        plan.size = sizeof plan;
        expect_true("pdl plan, zero elements", ordo_pdl_plan_launch(nullptr, nullptr, 0, 0, 256, ORDO_PDL_AUTO, &plan) == ORDO_ERROR_INVALID_ARGUMENT);
        expect_true("pdl plan, bad mode", ordo_pdl_plan_launch(nullptr, nullptr, 0, 16, 256, 9, &plan) == ORDO_ERROR_INVALID_ARGUMENT);
        expect_true("pdl plan, null kernels", ordo_pdl_plan_launch(nullptr, nullptr, 0, 16, 256, ORDO_PDL_AUTO, &plan) == ORDO_ERROR_INVALID_ARGUMENT);
    }
    // A pipeline's options are checked before CUDA: a zero element size throws, with or without a driver.
    try {
        ordo_pipeline_options o = ordo::pipeline::default_options();
        o.element_size = 0;
        ordo::pipeline p(o);
        expect_true("a zero element size throws", false);
    } catch (const ordo::error& e) {
        expect_true("element size status", e.status() == ORDO_ERROR_INVALID_ARGUMENT);
        expect_true("element size message", std::strstr(e.what(), "element_size") != nullptr);
    }
    {
        ordo_pipeline_options o = ORDO_PIPELINE_OPTIONS_INIT;
        o.size = sizeof o - 1;
        ordo_pipeline* p = nullptr;
        expect_true("options size too small", ordo_pipeline_create(&o, &p) == ORDO_ERROR_INVALID_ARGUMENT && p == nullptr);
        expect_true("run on a null pipeline", ordo_pipeline_run_on(nullptr, legacy.get(), nullptr, nullptr, nullptr, nullptr, 1, nullptr, nullptr) == ORDO_ERROR_INVALID_HANDLE);
        ordo_pipeline_destroy(nullptr);
    }
    return fails;
}
