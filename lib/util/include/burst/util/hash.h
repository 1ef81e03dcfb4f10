#pragma once
// A stable hash for fingerprints (of models, plans): the same text gives the same digits on
// every machine and every build, unlike std::hash.
#include <string>

namespace burst::util {

// 64-bit FNV-1a of `text`, as 16 hex digits.
std::string fnv1a_hex(const std::string& text);

}  // namespace burst::util
