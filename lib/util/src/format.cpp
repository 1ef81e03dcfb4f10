#include "burst/util/format.h"

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

std::string si_compact(double value) {
  static constexpr const char* kSuffixes[] = {"", "K", "M", "G", "T", "P", "E"};
  double scaled = value;
  size_t index = 0;
  while (std::fabs(scaled) >= 999.5 && index + 1 < std::size(kSuffixes)) {
    scaled /= 1000;
    ++index;
  }
  if (index == 0) return fmt::format("{:g}", value);
  return three_digits(scaled, kSuffixes[index]);
}

std::string bytes_compact(double bytes) {
  static constexpr const char* kUnits[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"};
  double scaled = bytes;
  size_t index = 0;
  while (std::fabs(scaled) >= 1023.5 && index + 1 < std::size(kUnits)) {
    scaled /= 1024;
    ++index;
  }
  if (index == 0) return fmt::format("{:g} B", bytes);
  return three_digits(scaled, kUnits[index]);
}

std::string bytes_decimal(double bytes) {
  static constexpr const char* kUnits[] = {" B", " kB", " MB", " GB", " TB", " PB", " EB"};
  double scaled = bytes;
  size_t index = 0;
  while (std::fabs(scaled) >= 999.5 && index + 1 < std::size(kUnits)) {
    scaled /= 1000;
    ++index;
  }
  if (index == 0) return fmt::format("{:g} B", bytes);
  return three_digits(scaled, kUnits[index]);
}

}  // namespace burst
