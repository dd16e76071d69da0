/* The header compiles as strict C99 after the CUDA runtime's header, where it routes
 * ordo_launch_kernel and ordo_pdl_plan_launch to their _resolved forms with this file's
 * cudaGetKernel: built with -std=c99 -Wall -Wextra -pedantic -Werror (the CUDA headers as system
 * headers). Never run: the calls type-check the routing. */
#include <cuda_runtime_api.h>
#include "ordo.h"

int ordo_header_c99_cudart_check(cudaStream_t stream, const void* kernel, void** args);
int ordo_header_c99_cudart_check(cudaStream_t stream, const void* kernel, void** args) {
    ordo_launch_config config;
    ordo_pdl_plan plan;
    ordo_kernel_resolver_fn resolver = ordo_kernel_resolver_here;
    ordo_status s;
    config.size = sizeof config;
    plan.size = sizeof plan;
    s = ordo_launch_kernel(stream, kernel, args, &config);
    if (s == ORDO_SUCCESS) s = ordo_pdl_plan_launch(kernel, kernel, 0, 1024, 256, ORDO_PDL_AUTO, &plan);
    /* In parentheses: the plain export. */
    if (s == ORDO_SUCCESS) s = (ordo_launch_kernel)(stream, kernel, args, &config);
    if (s == ORDO_SUCCESS) s = (ordo_pdl_plan_launch)(kernel, kernel, 0, 1024, 256, ORDO_PDL_AUTO, &plan);
    return s + (resolver != 0);
}
