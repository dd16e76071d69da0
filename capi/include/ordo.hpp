// ordo.hpp: a header-only C++17 layer over ordo.h. RAII handles, an error type that carries the
// thread's last error (status, CUDA code, stickiness, the failing call, a message), lambdas as
// callbacks (an exception thrown inside one is caught at the C boundary, which it must not cross,
// and rethrown once the ordo call has returned), and a stream reference that cannot be built from
// 0 or nullptr (CCCL's cuda::stream_ref rule: the legacy default stream is never used by accident).
//
// Everything here calls the C functions of ordo.h and adds no state of its own beyond what a
// callback needs; the contracts (threads, captures, blocking) are the ones ordo.h documents.
#pragma once

#include "ordo.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

namespace ordo {

// A failed ordo call: its status and, when the thread's last error is that call's, its detail.
class error : public std::exception {
public:
    // The failure an ordo call just returned: the detail is the thread's last error when that has
    // the same status (check() makes these right after the call).
    explicit error(ordo_status status) : status_(status), sticky_(ordo_status_is_sticky(status) != 0) {
        ordo_error_info info;
        info.size = sizeof info;
        if (ordo_last_error(&info) == ORDO_SUCCESS && info.status == status) {
            cuda_error_ = info.cuda_error;
            library_status_ = info.library_status;
            sticky_ = info.sticky != 0;
            call_ = info.call;
            message_ = info.message;
        } else {
            message_ = std::string(ordo_status_name(status)) + ": " + ordo_status_string(status);
        }
    }
    // A failure found by this header itself, before any ordo call: its own call and message, never
    // the thread's last error (which describes an earlier failure).
    error(ordo_status status, std::string call, std::string message)
        : status_(status), sticky_(false), call_(std::move(call)), message_(std::move(message)) {}
    ordo_status status() const noexcept { return status_; }
    // CUDA's code when the failure came from CUDA, else 0.
    int cuda_error() const noexcept { return cuda_error_; }
    // cuBLAS's, NCCL's or a callback's own status, else 0.
    int library_status() const noexcept { return library_status_; }
    // Whether the CUDA context is lost (a sticky error): the process must be restarted.
    bool sticky() const noexcept { return sticky_; }
    // The call that failed (a CUDA function, an ordo function, or the export).
    const std::string& call() const noexcept { return call_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    ordo_status status_;
    int cuda_error_ = 0;
    int library_status_ = 0;
    bool sticky_;
    std::string call_;
    std::string message_;
};

// Throws ordo::error unless `status` is ORDO_SUCCESS or ORDO_NOT_READY; returns whether it was
// ORDO_SUCCESS (false: "not yet").
inline bool check(ordo_status status) {
    if (ORDO_FAILED(status)) throw error(status);
    return status == ORDO_SUCCESS;
}

// A borrowed stream. Made from a non-null cudaStream_t (CUstream_st*), or named explicitly as one
// of the default streams; never from 0 or nullptr.
class stream_ref {
public:
    stream_ref() = delete;
    stream_ref(int) = delete;
    stream_ref(std::nullptr_t) = delete;
    // A null pointer held in a variable throws ordo::error (ORDO_ERROR_INVALID_ARGUMENT) that
    // describes that null stream.
    stream_ref(CUstream_st* stream) : stream_(stream) {  // NOLINT: implicit, as cudaStream_t
        if (stream == nullptr) {
            throw error(ORDO_ERROR_INVALID_ARGUMENT, "ordo::stream_ref",
                        "ORDO_ERROR_INVALID_ARGUMENT: ordo::stream_ref: a null stream (name a default stream with "
                        "ordo::stream_ref::legacy() or ordo::stream_ref::per_thread())");
        }
    }
    // cudaStreamLegacy and cudaStreamPerThread (their values in cuda_runtime_api.h).
    static stream_ref legacy() noexcept { return stream_ref(reinterpret_cast<CUstream_st*>(0x1), 0); }
    static stream_ref per_thread() noexcept { return stream_ref(reinterpret_cast<CUstream_st*>(0x2), 0); }
    CUstream_st* get() const noexcept { return stream_; }
    operator CUstream_st*() const noexcept { return stream_; }

private:
    stream_ref(CUstream_st* stream, int) noexcept : stream_(stream) {}
    CUstream_st* stream_;
};

namespace detail {
// The exception a callback threw on this thread, kept until the ordo call that ran it returns.
inline std::exception_ptr& pending() {
    thread_local std::exception_ptr e;
    return e;
}
// Throws what a callback threw during the call that returned `status`, else checks `status`.
inline bool finish(ordo_status status) {
    std::exception_ptr e = std::exchange(pending(), nullptr);
    if (e) std::rethrow_exception(e);
    return check(status);
}
// Runs a callback body: an exception is kept for finish() and reported to ordo as a failure.
template <class F>
ordo_status guarded(F&& f) noexcept {
    try {
        return std::forward<F>(f)();
    } catch (...) {
        pending() = std::current_exception();
        return ORDO_ERROR_LIBRARY;
    }
}
}  // namespace detail

// A launch configuration of `grid` x `block` (1-D), size set, no shared memory and no attribute set
// (PDL, priority, cluster, cooperative, events, mem_sync_domain and preferred_cluster all 0);
// change the other fields as needed.
inline ordo_launch_config launch_config(unsigned grid, unsigned block) noexcept {
    ordo_launch_config c{};
    c.size = sizeof c;
    c.grid[0] = grid;
    c.grid[1] = c.grid[2] = 1;
    c.block[0] = block;
    c.block[1] = c.block[2] = 1;
    return c;
}

namespace detail {
template <class T>
struct same {
    using type = T;
};
}  // namespace detail

// The two templates that take the program's own kernels have internal linkage (an unnamed
// namespace): each file's copy calls ordo_launch_kernel and ordo_pdl_plan_launch as ordo.h routes
// them in that file, with the cudaGetKernel of the CUDA runtime that file is linked with where it
// included the runtime's header first (CUDA 12.0 or later; ordo.h, LINKING AND YOUR OWN KERNELS),
// and no copy made in another file, or in another library with its own CUDA runtime, stands in
// for it. The routing is ordo.h's function-like macro, so it applies to calls only: the name
// ordo_launch_kernel (or ordo_pdl_plan_launch) used as a value, &ordo_launch_kernel, or passed to
// a std::function or a callback, is the plain export, silently. Pass these templates (a pointer to
// one of their instantiations routes as its file does) or ordo_launch_kernel_resolved with a
// resolver instead.
namespace {

// Launches the program's own kernel with ordo's checked configuration: the arguments are typed by
// the kernel's own parameters (ordo_launch_kernel).
template <class... Params>
void launch(stream_ref s, void (*kernel)(Params...), const ordo_launch_config& config,
            typename detail::same<Params>::type... args) {
    void* ptrs[sizeof...(Params) + 1] = {static_cast<void*>(&args)..., nullptr};
    check(ordo_launch_kernel(s, reinterpret_cast<const void*>(kernel), sizeof...(Params) ? ptrs : nullptr, &config));
}

// The PDL rule's plan for a kernel compiled in two forms by ORDO_PDL_KERNELS (`plain` = NAME,
// `pdl` = NAME_pdl) over n elements in blocks of `block` threads on `device`.
template <class... Params>
ordo_pdl_plan pdl_plan(void (*plain)(Params...), void (*pdl)(Params...), int device, size_t n, unsigned block,
                       int mode = ORDO_PDL_AUTO) {
    ordo_pdl_plan plan{};
    plan.size = sizeof plan;
    check(ordo_pdl_plan_launch(reinterpret_cast<const void*>(plain), reinterpret_cast<const void*>(pdl), device, n,
                               block, mode, &plan));
    return plan;
}

}  // namespace

// Version and build information.
inline int version_number() noexcept { return ordo_version_number(); }
inline bool header_matches_library() noexcept { return ordo_version_number() == ORDO_VERSION_NUMBER; }

// y = normalize(A x): A row-major rows x cols, device memory. Capturable.
inline void gemv_normalize(stream_ref s, const float* a, const float* x, float* y, size_t rows, size_t cols) {
    check(ordo_gemv_normalize(s, a, x, y, rows, cols));
}

// Grayscale + 5x5 blur of an interleaved-RGB frame. Capturable.
inline void frame_filter(stream_ref s, const uint8_t* rgb, uint8_t* out, size_t width, size_t height) {
    check(ordo_frame_filter(s, rgb, out, width, height));
}

// `steps` dependent kernels out = prev * scale + 1 (see ordo_pdl_chain); pdl: ordo's PDL rule.
inline void pdl_chain(stream_ref s, float* a, float* b, const float* scale, size_t n, size_t steps, bool pdl = true) {
    check(ordo_pdl_chain(s, a, b, scale, n, steps, pdl ? 1 : 0));
}

// The chunked copy/compute pipeline (ordo_pipeline_run). `compute(stream, input, output, n)` runs
// on the calling thread for each chunk, enqueuing its work on `stream`; it returns void or an
// ordo_status (a failure status stops the run, as in C). An exception it throws stops the run (its
// workers joined, as on any failure) and is rethrown here.
template <class Compute>
void pipeline_run(stream_ref s, const float* host_in, float* dev_in, float* dev_out, float* host_out, size_t n,
                  size_t chunks, Compute&& compute) {
    using Fn = std::remove_reference_t<Compute>;
    ordo_compute_fn trampoline = [](CUstream_st* st, const float* in, float* out, size_t count, void* user) {
        return detail::guarded([&]() -> ordo_status {
            Fn& f = *static_cast<Fn*>(user);
            if constexpr (std::is_void_v<decltype(f(stream_ref(st), in, out, count))>) {
                f(stream_ref(st), in, out, count);
                return ORDO_SUCCESS;
            } else {
                return f(stream_ref(st), in, out, count);
            }
        });
    };
    detail::finish(ordo_pipeline_run(s, host_in, dev_in, dev_out, host_out, n, chunks, trampoline,
                                     const_cast<void*>(static_cast<const void*>(std::addressof(compute)))));
}

// One chunk of a stencil run (ordo::pipeline::run_stencil, ordo_pipeline_run_stencil): device
// pointers to its input rows first_row - before .. first_row + rows + after (read only: the
// computes of neighbouring chunks read them too) and to its output rows first_row .. first_row +
// rows.
struct stencil_chunk {
    const void* input;
    void* output;
    size_t first_row;
    size_t rows;
    size_t before;
    size_t after;
};

// A pipeline made with options (ordo_pipeline_create). Move-only; the pipeline is destroyed with
// it. `options.size` is set here; the default options are ORDO_PIPELINE_OPTIONS_INIT's.
// `compute(stream, input, output, n)` gets device pointers to `n` elements of the pipeline's
// element size; it returns void or an ordo_status, and an exception it throws stops the run (its
// workers joined) and is rethrown here. Several threads may run one pipeline at once.
class pipeline {
public:
    static ordo_pipeline_options default_options() noexcept {
        ordo_pipeline_options o = ORDO_PIPELINE_OPTIONS_INIT;
        return o;
    }
    pipeline() : pipeline(default_options()) {}
    explicit pipeline(ordo_pipeline_options options) {
        options.size = sizeof options;
        check(ordo_pipeline_create(&options, &p_));
    }
    pipeline(pipeline&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    pipeline& operator=(pipeline&& o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    pipeline(const pipeline&) = delete;
    pipeline& operator=(const pipeline&) = delete;
    ~pipeline() { ordo_pipeline_destroy(p_); }

    // Runs over n elements; dev_in or dev_out nullptr: a temporary from the pipeline's pool.
    template <class Compute>
    void run(stream_ref s, const void* host_in, void* dev_in, void* dev_out, void* host_out, size_t n,
             Compute&& compute) {
        using Fn = std::remove_reference_t<Compute>;
        ordo_pipeline_fn trampoline = [](CUstream_st* st, const void* in, void* out, size_t count, void* user) {
            return detail::guarded([&]() -> ordo_status {
                Fn& f = *static_cast<Fn*>(user);
                if constexpr (std::is_void_v<decltype(f(stream_ref(st), in, out, count))>) {
                    f(stream_ref(st), in, out, count);
                    return ORDO_SUCCESS;
                } else {
                    return f(stream_ref(st), in, out, count);
                }
            });
        };
        detail::finish(ordo_pipeline_run_on(p_, s, host_in, dev_in, dev_out, host_out, n, trampoline,
                                            const_cast<void*>(static_cast<const void*>(std::addressof(compute)))));
    }
    // Runs ordo's 64-step kernel over n floats (a pipeline of 4-byte elements).
    void run(stream_ref s, const float* host_in, float* dev_in, float* dev_out, float* host_out, size_t n) {
        check(ordo_pipeline_run_on(p_, s, host_in, dev_in, dev_out, host_out, n, nullptr, nullptr));
    }
    // A stencil over `rows` rows of in_row_bytes in and out_row_bytes out, each chunk's compute
    // reading `halo` rows beyond its own on each side (ordo_pipeline_run_stencil). `compute(stream,
    // chunk)` gets an ordo::stencil_chunk; it returns void or an ordo_status, and an exception it
    // throws stops the run (its workers joined) and is rethrown here. dev_in or dev_out nullptr: a
    // temporary from the pipeline's pool.
    template <class Compute>
    void run_stencil(stream_ref s, const void* host_in, void* dev_in, void* dev_out, void* host_out, size_t rows,
                     size_t in_row_bytes, size_t out_row_bytes, size_t halo, Compute&& compute) {
        using Fn = std::remove_reference_t<Compute>;
        ordo_stencil_fn trampoline = [](CUstream_st* st, const void* in, void* out, size_t first_row, size_t count,
                                        size_t before, size_t after, void* user) {
            return detail::guarded([&]() -> ordo_status {
                Fn& f = *static_cast<Fn*>(user);
                const stencil_chunk chunk{in, out, first_row, count, before, after};
                if constexpr (std::is_void_v<decltype(f(stream_ref(st), chunk))>) {
                    f(stream_ref(st), chunk);
                    return ORDO_SUCCESS;
                } else {
                    return f(stream_ref(st), chunk);
                }
            });
        };
        detail::finish(ordo_pipeline_run_stencil(p_, s, host_in, dev_in, dev_out, host_out, rows, in_row_bytes,
                                                 out_row_bytes, halo, trampoline,
                                                 const_cast<void*>(static_cast<const void*>(std::addressof(compute)))));
    }
    ordo_pipeline* get() const noexcept { return p_; }

private:
    ordo_pipeline* p_ = nullptr;
};

// A CUDA-event timer (ordo_timer). Move-only.
class timer {
public:
    timer() { check(ordo_timer_create(&t_)); }
    timer(timer&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    timer& operator=(timer&& o) noexcept {
        std::swap(t_, o.t_);
        return *this;
    }
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;
    ~timer() { ordo_timer_destroy(t_); }
    void start(stream_ref s) { check(ordo_timer_start(t_, s)); }
    void stop(stream_ref s) { check(ordo_timer_stop(t_, s)); }
    // Milliseconds from start to stop; nullopt while the stop has not completed.
    std::optional<float> elapsed_ms() {
        float ms = 0;
        if (!check(ordo_timer_elapsed_ms(t_, &ms))) return std::nullopt;
        return ms;
    }
    ordo_timer* get() const noexcept { return t_; }

private:
    ordo_timer* t_ = nullptr;
};

// A ring of pinned staging slots (ordo_staging_ring). Move-only.
class staging_ring {
public:
    // A slot held under a ticket: fill `data`, then submit or release the ticket.
    struct slot {
        size_t ticket;
        void* data;
    };
    staging_ring(size_t slots, size_t slot_bytes) { check(ordo_staging_ring_create(slots, slot_bytes, &r_)); }
    staging_ring(staging_ring&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
    staging_ring& operator=(staging_ring&& o) noexcept {
        std::swap(r_, o.r_);
        return *this;
    }
    staging_ring(const staging_ring&) = delete;
    staging_ring& operator=(const staging_ring&) = delete;
    ~staging_ring() { ordo_staging_ring_destroy(r_); }
    // A free slot; nullopt when none is free now (wait false) or none can come free by waiting.
    std::optional<slot> acquire(bool wait) {
        slot s{0, nullptr};
        if (!check(ordo_staging_ring_acquire(r_, wait ? 1 : 0, &s.data, &s.ticket))) return std::nullopt;
        return s;
    }
    // Enqueues the copy of the slot's first `bytes` to `device_dst` on `stream`.
    void submit(const slot& s, size_t bytes, void* device_dst, stream_ref stream) {
        check(ordo_staging_ring_submit(r_, s.ticket, bytes, device_dst, stream));
    }
    void release(const slot& s) { check(ordo_staging_ring_release(r_, s.ticket)); }
    ordo_staging_ring* get() const noexcept { return r_; }

private:
    ordo_staging_ring* r_ = nullptr;
};

// Executable graphs by size bucket (ordo_graph_cache), with a lambda as the body:
// `body(stream, bucket)` enqueues the work for `bucket` elements on `stream` (it runs under
// capture). Move-only. The cache owns the body through ordo_graph_cache_options.user_free: it is
// deleted once the cache is destroyed and the last call in flight has returned (a body may
// destroy its own cache, and another thread's call may still be running when this object goes).
// Captures are thread-local unless the options say otherwise (ordo.h, CAPTURES, for global mode).
class graph_cache {
public:
    using body_fn = std::function<void(stream_ref, size_t)>;
    graph_cache(std::vector<size_t> buckets, bool overflow_eager, body_fn body)
        : graph_cache(std::move(buckets), options_with(overflow_eager), std::move(body)) {}
    // With options (capture mode, warm-up, overflow, instantiate flags); `size` and `user_free`
    // are set here.
    graph_cache(std::vector<size_t> buckets, ordo_graph_cache_options options, body_fn body) {
        options.size = sizeof options;
        options.user_free = [](void* user) noexcept { delete static_cast<body_fn*>(user); };
        // Owned by the cache from here: freed by user_free, also when the create fails.
        body_fn* owned = new body_fn(std::move(body));
        detail::finish(ordo_graph_cache_create_with_options(buckets.empty() ? nullptr : buckets.data(),
                                                            buckets.size(), &options, trampoline(), owned, &c_));
    }
    graph_cache(graph_cache&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    graph_cache& operator=(graph_cache&& o) noexcept {
        std::swap(c_, o.c_);
        return *this;
    }
    graph_cache(const graph_cache&) = delete;
    graph_cache& operator=(const graph_cache&) = delete;
    ~graph_cache() { ordo_graph_cache_destroy(c_); }
    void capture_all(stream_ref s) { detail::finish(ordo_graph_cache_capture_all(c_, s)); }
    // Runs the bucket for n elements; returns the bucket.
    size_t run(stream_ref s, size_t n) {
        size_t bucket = 0;
        detail::finish(ordo_graph_cache_run(c_, s, n, &bucket));
        return bucket;
    }
    ordo_graph_cache* get() const noexcept { return c_; }

private:
    static ordo_graph_cache_options options_with(bool overflow_eager) noexcept {
        ordo_graph_cache_options o{};
        o.size = sizeof o;
        o.overflow_eager = overflow_eager ? 1 : 0;
        return o;
    }
    static ordo_capture_fn trampoline() noexcept {
        return [](CUstream_st* s, size_t bucket, void* user) {
            return detail::guarded([&] {
                (*static_cast<body_fn*>(user))(stream_ref(s), bucket);
                return ordo_status(ORDO_SUCCESS);
            });
        };
    }
    ordo_graph_cache* c_ = nullptr;
};

}  // namespace ordo
