#include "burst/util/error.h"

#include <cstdio>
#include <cstdlib>

namespace burst {

void assertion_failed(const char* condition, const char* file, int line,
                      const std::string& message) {
  std::fprintf(stderr, "burst: internal error: %s (%s) at %s:%d\n", message.c_str(), condition,
               file, line);
  std::abort();
}

}  // namespace burst
