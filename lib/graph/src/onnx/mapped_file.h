#pragma once
// Internal: a file mapped read-only, so protobuf parses a model straight from the page
// cache, with no zero-filled buffer and no copy by read() (a 500 MB model spent half its
// import there). Kept apart from ONNX's headers: <sys/mman.h> defines MAP_TYPE, which
// onnx/defs/parser.h uses as a name.
#include <cstddef>
#include <string>

namespace burst::graph::onnx_import {

class MappedFile {
 public:
  // Errors (missing, not a regular file, empty, unreadable) are UserErrors naming `path`.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Unmaps the file early (once the parsed model holds what it needs).
  void release();

 private:
  void close_file();
  int descriptor_ = -1;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace burst::graph::onnx_import
