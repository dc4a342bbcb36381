/*
 * Integer kernel: a xorshift64 generator fed through a 64-bit finalizer-style mixer, folded into
 * an accumulator. Pure ALU work on locals: no memory traffic, no imports.
 */
#include <stdint.h>

#define ROUNDS 40000000u

static volatile uint64_t result;

static uint64_t mix64(uint64_t z) {
  z ^= z >> 31;
  z *= 0x7fb5d329728ea185ull;
  z ^= z >> 27;
  z *= 0x81dadef4bc2dd44dull;
  z ^= z >> 33;
  return z;
}

__attribute__((export_name("run"))) int run(void) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  uint64_t acc = 0;
  for (uint32_t i = 0; i < ROUNDS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    acc = (acc << 5 | acc >> 59) + mix64(x ^ i);
  }
  result = acc;
  return 0;
}

/* The low 32 bits of the last run's result, to check that every engine computed the same thing. */
__attribute__((export_name("check"))) uint32_t check(void) { return (uint32_t)result; }
