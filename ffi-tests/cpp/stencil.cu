// A CUDA C++17 program that runs a stencil through ordo's pipeline (ordo.hpp's
// ordo::pipeline::run_stencil over ordo_pipeline_run_stencil): a vertical box blur with a
// horizontal 2x downsample of a frame of floats, computed by the program's own kernel over each
// chunk's rows and halo, checked bit for bit against the same arithmetic on the CPU: device
// temporaries and the program's own device buffers, planned and given chunk counts, a halo larger
// than a chunk, a run captured in global mode and replayed twice on new input, a compute that
// throws, and the documented refusals. Returns the number of failed checks.
#include "ordo.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace {
int fails = 0;
void expect_true(const char* what, bool ok) {
    if (!ok) {
        std::printf("FAIL %s\n", what);
        ++fails;
    }
}
void expect_status(const char* what, ordo_status got, ordo_status want) {
    if (got != want) {
        std::printf("FAIL %s: status %d, expected %d\n", what, got, want);
        ++fails;
    }
}

// out[r][c] = mean over dr in [-radius, radius] of (in[rr][2c] + in[rr][2c + 1]) / 2, rr clamped
// to the chunk's rows and halo (-before .. rows - 1 + after); each operation rounded on its own.
__global__ void stencil_blur_down(const float* in, float* out, int width, int rows, int before, int after,
                                  int radius) {
    const int half = width / 2;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c >= half || r >= rows) return;
    float acc = 0.0f;
    for (int dr = -radius; dr <= radius; ++dr) {
        const int rr = min(max(r + dr, -before), rows - 1 + after) + before;
        const float* row = in + (size_t)rr * width;
        acc = __fadd_rn(acc, __fmul_rn(__fadd_rn(row[2 * c], row[2 * c + 1]), 0.5f));
    }
    out[(size_t)r * half + c] = __fdiv_rn(acc, (float)(2 * radius + 1));
}

std::vector<float> blur_down_cpu(const float* in, int width, int height, int radius) {
    const int half = width / 2;
    std::vector<float> out((size_t)height * half);
    for (int r = 0; r < height; ++r) {
        for (int c = 0; c < half; ++c) {
            float acc = 0.0f;
            for (int dr = -radius; dr <= radius; ++dr) {
                int rr = r + dr < 0 ? 0 : (r + dr > height - 1 ? height - 1 : r + dr);
                const float* row = in + (size_t)rr * width;
                // Volatile: the host compiler contracts nothing either.
                volatile float sum = row[2 * c] + row[2 * c + 1];
                volatile float term = sum * 0.5f;
                acc = acc + term;
            }
            out[(size_t)r * half + c] = acc / (float)(2 * radius + 1);
        }
    }
    return out;
}

void fill_frame(float* in, int width, int height, unsigned seed) {
    for (int r = 0; r < height; ++r) {
        for (int c = 0; c < width; ++c) {
            unsigned x = (unsigned)r * 0x9e3779b1u ^ (unsigned)c * 0x85ebca77u ^ seed;
            x ^= x >> 15;
            x *= 0x2c1b3c6du;
            x ^= x >> 12;
            in[(size_t)r * width + c] = 1.0f + (float)(x % 1000u) / 7.0f;
        }
    }
}

bool same_bits(const float* a, const std::vector<float>& b) {
    return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}
}  // namespace

extern "C" int ffi_stencil_main() {
    fails = 0;
    cudaStream_t raw;
    cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking);
    ordo::stream_ref s(raw);
    const int width = 64, height = 101;
    const size_t in_row = width * sizeof(float), out_row = width / 2 * sizeof(float);
    float *h_in = nullptr, *h_out = nullptr, *d_in = nullptr, *d_out = nullptr;
    cudaMallocHost(&h_in, height * in_row);
    cudaMallocHost(&h_out, height * out_row);
    cudaMalloc(&d_in, height * in_row);
    cudaMalloc(&d_out, height * out_row);
    try {
        // Runs the blur of `radius` rows with halo `halo` on `p`; true when the result is the
        // CPU's and every chunk's rows are its window.
        auto run = [&](ordo::pipeline& p, int halo, int radius, bool own_buffers, unsigned seed) {
            fill_frame(h_in, width, height, seed);
            std::memset(h_out, 0xff, height * out_row);  // NaNs: every value must be written
            size_t next_row = 0;
            bool windows = true;
            p.run_stencil(s, h_in, own_buffers ? d_in : nullptr, own_buffers ? d_out : nullptr, h_out, height, in_row,
                          out_row, halo, [&](ordo::stream_ref st, const ordo::stencil_chunk& c) -> ordo_status {
                              windows = windows && c.first_row == next_row && c.rows > 0 &&
                                        c.before == (c.first_row < (size_t)halo ? c.first_row : (size_t)halo);
                              size_t below = height - (c.first_row + c.rows);
                              windows = windows && c.after == (below < (size_t)halo ? below : (size_t)halo);
                              next_row = c.first_row + c.rows;
                              dim3 grid((width / 2 + 31) / 32, (unsigned)(c.rows + 7) / 8);
                              stencil_blur_down<<<grid, dim3(32, 8), 0, st.get()>>>(
                                  static_cast<const float*>(c.input), static_cast<float*>(c.output), width,
                                  (int)c.rows, (int)c.before, (int)c.after, radius);
                              return cudaGetLastError() == cudaSuccess ? ORDO_SUCCESS : ORDO_ERROR_LIBRARY;
                          });
            cudaStreamSynchronize(raw);
            return windows && next_row == (size_t)height && same_bits(h_out, blur_down_cpu(h_in, width, height, radius));
        };

        ordo_pipeline_options given = ordo::pipeline::default_options();
        given.chunks = 7;  // 101 rows: chunks of 14 and 15
        ordo_pipeline_options planned = ordo::pipeline::default_options();
        planned.streams = 4;
        ordo::pipeline p7(given), pp(planned);
        expect_true("stencil, 7 chunks, halo 1, temporaries", run(p7, 1, 1, false, 1));
        expect_true("stencil, 7 chunks, halo 2, own buffers", run(p7, 2, 2, true, 2));
        expect_true("stencil, planned, halo 3, temporaries", run(pp, 3, 3, false, 3));
        expect_true("stencil, planned, halo 2, own buffers", run(pp, 2, 2, true, 4));
        // Halos past a chunk of 14 rows, and past the frame.
        expect_true("stencil, 7 chunks, halo 20", run(p7, 20, 20, false, 5));
        expect_true("stencil, 7 chunks, halo 200, radius 150", run(p7, 200, 150, true, 6));

        // Captured in global mode into the program's graph (temporaries as its allocation
        // nodes), replayed twice on new input.
        {
            const int halo = 2;
            auto compute = [&](ordo::stream_ref st, const ordo::stencil_chunk& c) {
                dim3 grid((width / 2 + 31) / 32, (unsigned)(c.rows + 7) / 8);
                stencil_blur_down<<<grid, dim3(32, 8), 0, st.get()>>>(static_cast<const float*>(c.input),
                                                                      static_cast<float*>(c.output), width,
                                                                      (int)c.rows, (int)c.before, (int)c.after, halo);
            };
            cudaGraph_t graph = nullptr;
            cudaGraphExec_t exec = nullptr;
            cudaStreamBeginCapture(raw, cudaStreamCaptureModeGlobal);
            bool ran = true;
            try {
                p7.run_stencil(s, h_in, nullptr, nullptr, h_out, height, in_row, out_row, halo, compute);
            } catch (const ordo::error& e) {
                std::printf("captured stencil: %s\n", e.what());
                ran = false;
            }
            expect_true("a stencil run captured in global mode",
                        cudaStreamEndCapture(raw, &graph) == cudaSuccess && ran && graph != nullptr);
            expect_true("instantiated", graph != nullptr && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
            for (unsigned round = 0; exec != nullptr && round < 2; ++round) {
                fill_frame(h_in, width, height, 100 + round);
                std::memset(h_out, 0xff, height * out_row);
                cudaGraphLaunch(exec, raw);
                cudaStreamSynchronize(raw);
                expect_true("a captured stencil replayed on new input",
                            same_bits(h_out, blur_down_cpu(h_in, width, height, halo)));
            }
            if (exec != nullptr) cudaGraphExecDestroy(exec);
            if (graph != nullptr) cudaGraphDestroy(graph);
        }

        // A compute that throws on its second chunk: the exception comes back after the join.
        int chunk = 0;
        try {
            p7.run_stencil(s, h_in, d_in, d_out, h_out, height, in_row, out_row, 1,
                           [&](ordo::stream_ref, const ordo::stencil_chunk&) {
                               if (++chunk == 2) throw std::runtime_error("stencil says no");
                           });
            expect_true("a throwing stencil compute's exception is rethrown", false);
        } catch (const std::runtime_error& e) {
            expect_true("the stencil compute's own exception", std::strcmp(e.what(), "stencil says no") == 0 && chunk == 2);
        }
        cudaStreamSynchronize(raw);

        // Refusals, before anything is enqueued.
        ordo_stencil_fn nop = [](CUstream_st*, const void*, void*, size_t, size_t, size_t, size_t, void*) -> ordo_status {
            return ORDO_SUCCESS;
        };
        const ordo_status ia = ORDO_ERROR_INVALID_ARGUMENT;
        ordo_pipeline* h = p7.get();
        expect_status("stencil NULL compute",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, h_out, height, in_row, out_row, 1, nullptr, nullptr), ia);
        expect_status("stencil zero rows",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, h_out, 0, in_row, out_row, 1, nop, nullptr), ia);
        expect_status("stencil zero bytes a row",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, h_out, height, in_row, 0, 1, nop, nullptr), ia);
        expect_status("stencil more chunks than rows",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, h_out, 6, in_row, out_row, 1, nop, nullptr), ia);
        expect_status("stencil rows * row bytes overflows",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, h_out, SIZE_MAX / 2, in_row, out_row, 1, nop, nullptr), ia);
        expect_status("stencil misaligned output",
                      ordo_pipeline_run_stencil(h, raw, h_in, d_in, d_out, reinterpret_cast<char*>(h_out) + 4, height, in_row, out_row, 1, nop, nullptr), ia);
        std::vector<float> pageable(height * width);
        expect_status("stencil pageable input",
                      ordo_pipeline_run_stencil(h, raw, pageable.data(), d_in, d_out, h_out, height, in_row, out_row, 1, nop, nullptr),
                      ORDO_ERROR_PAGEABLE_MEMORY);
        expect_status("stencil on a destroyed handle",
                      ordo_pipeline_run_stencil(nullptr, raw, h_in, d_in, d_out, h_out, height, in_row, out_row, 1, nop, nullptr),
                      ORDO_ERROR_INVALID_HANDLE);
    } catch (const ordo::error& e) {
        std::printf("FAIL ordo::error %d: %s (%s)\n", e.status(), e.what(), e.call().c_str());
        ++fails;
    }
    cudaStreamSynchronize(raw);
    cudaFreeHost(h_in);
    cudaFreeHost(h_out);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaStreamDestroy(raw);
    return fails;
}
