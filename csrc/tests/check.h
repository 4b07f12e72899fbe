/* The C tests' checks and random numbers: CHECK counts passes and prints failures
 * (file, line, message); rng() is a xorshift64 generator (seed it by assigning
 * rng_state).  Each test program includes this once and ends with
 * `return check_summary();`. */
#ifndef NDPACK_TEST_CHECK_H
#define NDPACK_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                            \
  do {                                              \
    if (cond) {                                     \
      passed++;                                     \
    } else {                                        \
      failed++;                                     \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);   \
      printf(__VA_ARGS__);                          \
      printf("\n");                                 \
    }                                               \
  } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static inline int check_summary(void) {
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}

#endif
