#include "burst/util/memory_reuse.h"

#include <limits>  // first: a C++ library header defines __GLIBC__ where it applies

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace burst::util {

bool keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // No block from mmap (each would be unmapped again on free), and a trim threshold no heap
  // reaches: freed blocks stay in malloc's free lists for the next step.
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && no_trim;
#else
  return false;
#endif
}

}  // namespace burst::util
