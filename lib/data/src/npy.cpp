#include "npy.h"

#include <cstring>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

// Where the dict ends and the elements start, from the version's header-length field.
size_t header_end(const MappedFile& file, std::string* header) {
  const uint8_t* bytes = file.data();
  if (file.size() < kMagicBytes + 4 || std::memcmp(bytes, kMagic, kMagicBytes) != 0) {
    throw UserError(fmt::format("'{}' is not a .npy file (no \\x93NUMPY magic at its start)", file.path()));
  }
  const uint8_t major = bytes[6];
  size_t length = 0;
  size_t start = 0;
  if (major == 1) {
    length = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) throw UserError(fmt::format("'{}': the .npy header is cut short", file.path()));
    length = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8 |
             static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
    start = 12;
  } else {
    throw UserError(fmt::format("'{}': .npy version {} is not 1, 2 or 3", file.path(), major));
  }
  if (start + length > file.size()) {
    throw UserError(fmt::format("'{}': the .npy header declares {} bytes but the file has {}", file.path(), length,
                                file.size() - start));
  }
  header->assign(reinterpret_cast<const char*>(bytes + start), length);
  return start + length;
}

// The text of `key`'s value in the header's dict, up to the first of `terminators` after
// its `opening` (a quote or a parenthesis; empty for a bare word).
std::string dict_value(const std::string& header, const std::string& key, const std::string& opening,
                       const std::string& terminators, const std::string& path) {
  const size_t name = header.find("'" + key + "'");
  size_t value = name == std::string::npos ? name : header.find(':', name);
  if (value != std::string::npos) value = header.find_first_not_of(" ", value + 1);
  if (value == std::string::npos || header.compare(value, opening.size(), opening) != 0) {
    throw UserError(fmt::format("'{}': the .npy header has no readable '{}' ({})", path, key, header));
  }
  value += opening.size();
  const size_t end = header.find_first_of(terminators, value);
  if (end == std::string::npos) throw UserError(fmt::format("'{}': the .npy header's '{}' does not end ({})", path, key, header));
  return header.substr(value, end - value);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<int64_t> shape;
  size_t at = 0;
  while ((at = text.find_first_of("0123456789", at)) != std::string::npos) {
    const size_t end = text.find_first_not_of("0123456789", at);
    const std::string digits = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (digits.size() > 18) throw UserError(fmt::format("'{}': a .npy dimension {} is too large", path, digits));
    shape.push_back(std::stoll(digits));
    at = end;
  }
  return shape;
}

// "<f4" -> 4: a byte order that is little-endian or does not matter, a kind, a size.
int64_t element_bytes_of(const std::string& descr, const std::string& path) {
  const bool readable = descr.size() >= 3 && std::string("<|=").find(descr[0]) != std::string::npos &&
                        std::string("fiub").find(descr[1]) != std::string::npos &&
                        descr.find_first_not_of("0123456789", 2) == std::string::npos && descr.size() <= 4;
  if (!readable) throw UserError(fmt::format("'{}': element type '{}' is not a little-endian number", path, descr));
  return std::stoll(descr.substr(2));
}

}  // namespace

NpyArray parse_npy(const MappedFile& file) {
  std::string header;
  const size_t data_start = header_end(file, &header);
  NpyArray array;
  array.descr = dict_value(header, "descr", "'", "'", file.path());
  if (dict_value(header, "fortran_order", "", ",}", file.path()) != "False") {
    throw UserError(fmt::format("'{}' is in Fortran order; save it in C order (numpy.ascontiguousarray)", file.path()));
  }
  array.shape = parse_shape(dict_value(header, "shape", "(", ")", file.path()), file.path());
  array.element_bytes = element_bytes_of(array.descr, file.path());
  int64_t elements = 1;
  for (const int64_t extent : array.shape) {
    const std::optional<int64_t> product = checked_mul(elements, extent);
    if (!product) throw UserError(fmt::format("'{}': the .npy shape overflows", file.path()));
    elements = *product;
  }
  const std::optional<int64_t> bytes = checked_mul(elements, array.element_bytes);
  const int64_t have = static_cast<int64_t>(file.size() - data_start);
  if (!bytes || *bytes != have) {
    throw UserError(fmt::format("'{}' is truncated or padded: its header declares shape ({}) of {} ({} bytes) but it "
                                "holds {} bytes",
                                file.path(), fmt::join(array.shape, ", "), array.descr,
                                bytes ? fmt::format("{}", *bytes) : std::string("too many"), have));
  }
  array.elements = elements;
  array.data = file.data() + data_start;
  return array;
}

}  // namespace burst::data::detail
