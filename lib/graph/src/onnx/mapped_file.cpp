#include "onnx/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::graph::onnx_import {

MappedFile::MappedFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw UserError(fmt::format("cannot open ONNX model '{}': {}", path, std::strerror(ENOENT)));
  }
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UserError(fmt::format("cannot read ONNX model '{}': not a regular file", path));
  }
  descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor_ < 0) throw UserError(fmt::format("cannot open ONNX model '{}': {}", path, std::strerror(errno)));
  struct stat status {};
  if (::fstat(descriptor_, &status) != 0) {
    const int code = errno;
    close_file();
    throw UserError(fmt::format("cannot read ONNX model '{}': {}", path, std::strerror(code)));
  }
  size_ = static_cast<size_t>(status.st_size);
  if (size_ == 0) {
    close_file();
    throw UserError(fmt::format("ONNX model '{}' is empty", path));
  }
  // MAP_POPULATE faults the pages in at once rather than one by one while parsing.
  void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, descriptor_, 0);
  if (mapped == MAP_FAILED) {
    const int code = errno;
    close_file();
    throw UserError(fmt::format("cannot map ONNX model '{}': {}", path, std::strerror(code)));
  }
  data_ = static_cast<const char*>(mapped);
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  close_file();
}

void MappedFile::close_file() {
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
}

}  // namespace burst::graph::onnx_import
