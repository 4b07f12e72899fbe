/* One place that names status codes and formats error messages. */
#include <stdio.h>

#include "internal.h"

const char *ndp_status_name(int code) {
  switch (code) {
    case NDP_OK: return "ok";
    case NDP_ERR_FORMAT: return "invalid chunk";
    case NDP_ERR_CODEC: return "unknown codec";
    case NDP_ERR_FILTER: return "invalid filter";
    case NDP_ERR_PARAM: return "invalid parameter";
    case NDP_ERR_DEST_SIZE: return "destination too small";
    case NDP_ERR_MEMORY: return "out of memory";
    case NDP_ERR_CALLBACK: return "user codec or filter failed";
    case NDP_ERR_THREAD: return "thread error";
    default: return "unknown error";
  }
}

int ndp_fail(ndp_error *err, int code, const char *fmt, ...) {
  if (err != NULL && err->code == NDP_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}
