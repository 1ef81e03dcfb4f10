#include "burst/launch/worker_status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

namespace burst::launch {
namespace {

// The file: one kind byte ('a' activity, 'f' failure, 0 nothing yet), then the text,
// NUL-terminated, truncated to fit.
constexpr size_t kStatusBytes = 1024;

std::string status_path(const std::string& directory, int rank) { return fmt::format("{}/rank-{}", directory, rank); }

}  // namespace

std::optional<WorkerStatus> WorkerStatus::from_environment(int rank) {
  const char* directory = std::getenv(kStatusDirectoryVariable);
  if (directory == nullptr || *directory == '\0') return std::nullopt;
  const std::string path = status_path(directory, rank);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);  // no O_TRUNC: two mappings may share it
  if (fd < 0) return std::nullopt;
  if (::ftruncate(fd, kStatusBytes) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  void* mapping = ::mmap(nullptr, kStatusBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) return std::nullopt;
  return WorkerStatus(static_cast<char*>(mapping));
}

WorkerStatus::WorkerStatus(WorkerStatus&& other) noexcept : mapping_(other.mapping_) { other.mapping_ = nullptr; }

WorkerStatus::~WorkerStatus() {
  if (mapping_ != nullptr) ::munmap(mapping_, kStatusBytes);
}

void WorkerStatus::write(char kind, const std::string& text) {
  if (mapping_ == nullptr) return;
  const size_t length = std::min(text.size(), kStatusBytes - 2);
  mapping_[0] = 0;  // a reader never sees a kind with half a text
  std::memcpy(mapping_ + 1, text.data(), length);
  mapping_[1 + length] = '\0';
  mapping_[0] = kind;
}

void WorkerStatus::doing(const std::string& activity) { write('a', activity); }
void WorkerStatus::failed(const std::string& message) { write('f', message); }

std::optional<RecordedStatus> read_worker_status(const std::string& directory, int rank) {
  std::ifstream file(status_path(directory, rank), std::ios::binary);
  if (!file) return std::nullopt;
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 2 || (bytes[0] != 'a' && bytes[0] != 'f')) return std::nullopt;
  RecordedStatus status;
  status.failed = bytes[0] == 'f';
  status.text = std::string(bytes.c_str() + 1);
  if (status.text.empty()) return std::nullopt;
  return status;
}

}  // namespace burst::launch
