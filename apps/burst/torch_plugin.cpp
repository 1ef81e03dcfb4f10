#include "torch_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cli {
namespace {

// The plugin's path: BURST_TORCH_PLUGIN (a file name, set by CMake) in the executable's
// directory.
std::string plugin_path() {
  char exe[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) return BURST_TORCH_PLUGIN;
  std::string dir(exe, static_cast<size_t>(length));
  dir.erase(dir.rfind('/') + 1);
  return dir + BURST_TORCH_PLUGIN;
}

}  // namespace

void* plugin_symbol(const char* symbol) {
  const std::string path = plugin_path();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw UserError(fmt::format(
        "this command needs burst's libtorch plugin, which did not load: {}", ::dlerror()));
  }
  void* found = ::dlsym(handle, symbol);
  if (found == nullptr) {
    throw UserError(fmt::format("burst's libtorch plugin '{}' has no '{}'", path, symbol));
  }
  return found;
}

}  // namespace burst::cli
