#pragma once
// Overflow-checked int64 arithmetic for sizes, parameter counts and FLOPs.
// Model files are untrusted input: a "huge" size must become a clear error,
// never a wrapped-around number or undefined behaviour.
#include <cstdint>
#include <optional>

namespace burst {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

}  // namespace burst
