#include "burst/util/format.h"

#include <array>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace burst {

std::string with_thousands(int64_t value) {
  // Work on the unsigned magnitude so INT64_MIN does not overflow on negation.
  const bool negative = value < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const std::string digits = std::to_string(magnitude);
  std::string grouped;
  grouped.reserve(digits.size() + digits.size() / 3 + 1);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) grouped.push_back(',');
    grouped.push_back(digits[i]);
  }
  return negative ? "-" + grouped : grouped;
}

namespace {

// Three significant digits of `scaled` (1 <= |scaled| < 1000 expected) plus a unit.
std::string three_digits(double scaled, const char* unit) {
  const double magnitude = std::fabs(scaled);
  if (magnitude >= 100) return fmt::format("{:.0f}{}", scaled, unit);
  if (magnitude >= 10) return fmt::format("{:.1f}{}", scaled, unit);
  return fmt::format("{:.2f}{}", scaled, unit);
}

}  // namespace

namespace {

// `value` in the largest of `units` (each `base` times the one before) that keeps it at
// least 1, with three significant digits; units[0] as "{:g}" when it is below `base`.
std::string with_units(double value, double base, const std::array<const char*, 7>& units) {
  double scaled = value;
  size_t index = 0;
  while (std::fabs(scaled) >= base - 0.5 && index + 1 < units.size()) {
    scaled /= base;
    ++index;
  }
  if (index == 0) return fmt::format("{:g}{}", value, units[0]);
  return three_digits(scaled, units[index]);
}

}  // namespace

std::string si_compact(double value) { return with_units(value, 1000, {"", "K", "M", "G", "T", "P", "E"}); }

std::string bytes_compact(double bytes) {
  return with_units(bytes, 1024, {" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"});
}

std::string bytes_decimal(double bytes) {
  return with_units(bytes, 1000, {" B", " kB", " MB", " GB", " TB", " PB", " EB"});
}

}  // namespace burst
