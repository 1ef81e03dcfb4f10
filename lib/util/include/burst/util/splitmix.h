#pragma once
// A tiny, fully specified random number generator: SplitMix64 (Steele, Lea, Flood 2014;
// the reference code is Vigna's splitmix64.c). Everything the data library draws at random
// (synthetic samples, epoch shuffles) comes from here rather than from <random>'s
// distributions, whose algorithms differ between standard libraries: the same seed must
// give the same samples and the same order on every rank and every platform. Dropout's
// Philox keys are derived with it too (burst/layers/sample_random.h).
#include <cstdint>

namespace burst::util {

// SplitMix64's output function: a bijective 64-bit mix (also a good hash of a counter).
inline uint64_t mix64(uint64_t value) {
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

// A seed for stream `stream` (an epoch, a sample index, ...) of generator `seed`, so that
// independent streams can be drawn in any order: streams are counter-based, not sequential.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL));
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;  // the golden-ratio increment (Weyl sequence)
    return mix64(state_);
  }

  // Uniform in [0, bound), bound >= 1, without modulo bias: draws below 2^64 mod bound are
  // rejected, so every remainder is reached by the same number of 64-bit values.
  uint64_t below(uint64_t bound) {
    const uint64_t rejected_below = (0 - bound) % bound;  // == 2^64 mod bound
    for (;;) {
      const uint64_t value = next();
      if (value >= rejected_below) return value % bound;
    }
  }

  // Uniform in [0, 1) on the grid of multiples of 2^-24: every value is exact in float, so
  // the result does not depend on the platform's rounding.
  float unit_float() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

 private:
  uint64_t state_;
};

}  // namespace burst::util
