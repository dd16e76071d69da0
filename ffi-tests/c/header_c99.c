/* The header compiles as strict C99: built with -std=c99 -Wall -Wextra -pedantic -Werror. */
#include "ordo.h"

int ordo_header_c99_check(void);
int ordo_header_c99_check(void) {
    ordo_status s = ORDO_SUCCESS;
    ordo_compute_fn f = 0;
    ordo_capture_fn g = 0;
    ordo_graph_cache* c = 0;
    ordo_staging_ring* r = 0;
    ordo_timer* t = 0;
    ordo_pipeline* p = 0;
    ordo_pipeline_fn h = 0;
    ordo_pipeline_options o = ORDO_PIPELINE_OPTIONS_INIT;
    ordo_stencil_fn k = 0;
    (void)f; (void)g; (void)c; (void)r; (void)t; (void)p; (void)h; (void)o; (void)k;
    return s + ORDO_ERROR_PANIC + 4;
}
