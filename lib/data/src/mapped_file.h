#pragma once
// A whole file mapped read-only into memory (POSIX mmap): the bytes stay on disk and the
// page cache holds what is read. Internal to lib/data.
#include <cstddef>
#include <cstdint>
#include <string>

namespace burst::data::detail {

class MappedFile {
 public:
  // UserError naming the path when it cannot be opened or mapped (`what` says whose file it
  // is in the message, e.g. "--dataset npy: inputs").
  MappedFile(const std::string& path, const std::string& what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace burst::data::detail
