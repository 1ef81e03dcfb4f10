#include "burst/util/hash.h"

#include <cstdint>

#include <fmt/format.h>

namespace burst::util {

std::string fnv1a_hex(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a's 64-bit offset basis
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;  // its 64-bit prime
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace burst::util
