// Does cuLogsDumpToMemory stay inside the size it is given when the driver's log holds more than
// that? A standalone experiment, not part of the build: plain CUDA C++ (runtime API only), so that
// no ordo code is inside what it checks.
//
//   nvcc -O2 -o log_dump_bounds benches/experiments/log_dump_bounds.cu
//   ./log_dump_bounds
//
// Why: ordo read the driver's log after a failure into a 4096-byte buffer on the stack, and the C
// ABI's fuzz then crashed (SIGSEGV in the caller, writing through a register just restored) once
// the log held more than 4096 bytes. CUDA's header says that for a *size too small for the buffered
// messages the driver puts a note at the head, "computes the number of messages it is able to
// store" and writes them, NUL-terminated. Here: the log is filled with failures (a null buffer,
// refused with "buffer cannot be NULL"), then read with offers of 64 bytes to 32 KiB into a larger
// allocation filled with a canary; for each offer, the bytes the driver wrote (the last byte that is
// not the canary, plus one) against the offer, and the returned status and *size. Look for: any
// "written" beyond "offered" (out of bounds: the offer must exceed the log, as ordo's does).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <vector>

typedef unsigned int LogIterator;
typedef int (*DumpFn)(LogIterator*, char*, size_t*, unsigned);

int main() {
  if (cudaFree(nullptr) != cudaSuccess) { std::printf("no CUDA device\n"); return 1; }
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuLogsDumpToMemory", &p, 12090, 0, &q) != cudaSuccess || !p) {
    std::printf("the driver has no cuLogsDumpToMemory (older than 12.9)\n");
    return 0;
  }
  DumpFn dump = reinterpret_cast<DumpFn>(p);
  const size_t canary_room = 64 * 1024;
  const size_t offers[] = {64, 256, 1024, 4096, 8192, 16384, 25600, 29696, 32768};
  for (int fill : {40, 400}) {
    for (int i = 0; i < fill; ++i) {
      size_t s = 64;
      dump(nullptr, nullptr, &s, 0);  // refused: a line "buffer cannot be NULL" and a Returning line
    }
    std::printf("after %d more failures:\n", fill);
    for (size_t offer : offers) {
      std::vector<unsigned char> buf(offer + canary_room, 0xAB);
      size_t size = offer;
      int code = dump(nullptr, reinterpret_cast<char*>(buf.data()), &size, 0);
      size_t written = 0;
      for (size_t i = buf.size(); i > 0; --i) {
        if (buf[i - 1] != 0xAB) { written = i; break; }
      }
      std::printf("  offered %6zu: status %d, *size %6zu, written %6zu%s\n", offer, code, size, written,
                  written > offer ? "  <-- past the offer" : "");
    }
  }
  return 0;
}
