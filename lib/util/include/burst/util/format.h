#pragma once
// Human-readable number formatting for tables (locale-independent).
#include <cstdint>
#include <string>

namespace burst {

// 138357544 -> "138,357,544"; -1234 -> "-1,234".
std::string with_thousands(int64_t value);

// Compact magnitude with an SI suffix and three significant digits:
// 15470000000 -> "15.5G", 2048 -> "2.05K", 12 -> "12".
std::string si_compact(double value);

// Bytes in binary units: 802816 -> "784 KiB", 1536 -> "1.50 KiB", 12 -> "12 B".
std::string bytes_compact(double bytes);

// Bytes in decimal units, as device memory is sold (an A100 has 40 GB): 40e9 -> "40.0 GB",
// 1152 -> "1.15 kB", 553400000 -> "553 MB", 12 -> "12 B".
std::string bytes_decimal(double bytes);

}  // namespace burst
