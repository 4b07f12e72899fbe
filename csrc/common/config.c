/* Run-time configuration queries exposed through ndpack.h. */
#include <string.h>

#include "internal.h"
#include "../filters/filters.h"

const char *ndp_isa_name(void) { return ndp_filters()->name; }

int ndp_set_isa(const char *name) {
  for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
    const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
    if (k != NULL && strcmp(k->name, name) == 0) return ndp_filters_set_isa(isa);
  }
  return -1;
}
