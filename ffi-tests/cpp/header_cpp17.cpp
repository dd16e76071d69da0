// The header compiles as C++17 (-Wall -Wextra -Werror) and its declarations have C linkage.
#include "ordo.h"
#include <type_traits>

static_assert(std::is_same<decltype(&ordo_gemv_normalize),
                           ordo_status (*)(CUstream_st*, const float*, const float*, float*, size_t, size_t)>::value,
              "ordo_gemv_normalize signature");
static_assert(ORDO_ERROR_INVALID_ARGUMENT == -1 && ORDO_NOT_READY == 600, "status values");
static_assert(sizeof(ordo_status) == 4, "a fixed-width status");

extern "C" int ordo_header_cpp17_check() { return ordo_cuda_version() > 0 ? 0 : 1; }
