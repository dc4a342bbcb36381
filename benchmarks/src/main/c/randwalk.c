/*
 * Memory-bound kernel: fills a 16 MiB table of 32-bit words from a generator, then follows
 * STEPS data-dependent random indices through it, so nearly every load misses the caches.
 */
#include <stdint.h>

#define WORDS (4u * 1024 * 1024) /* 16 MiB */
#define MASK (WORDS - 1)
#define STEPS 2000000u

static uint32_t table[WORDS];
static volatile uint32_t result;

__attribute__((export_name("run"))) int run(void) {
  uint32_t s = 0x2545f491u;
  for (uint32_t i = 0; i < WORDS; i++) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    table[i] = s;
  }
  uint32_t idx = 0, acc = 0;
  for (uint32_t n = 0; n < STEPS; n++) {
    uint32_t v = table[idx];
    acc += v;
    table[idx] = v + n;
    idx = (v ^ (acc >> 7) ^ n) & MASK;
  }
  result = acc;
  return 0;
}

__attribute__((export_name("check"))) uint32_t check(void) { return result; }
