#include "burst/util/memory_reuse.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
#include <malloc.h>

namespace {

// A 64 MiB block: far above glibc's default mmap threshold (128 KiB, at most 32 MiB when it
// adapts), so by default it is mmapped and unmapped again on free.
constexpr size_t kBlock = size_t{64} << 20;

size_t mapped_bytes() { return mallinfo2().hblkhd; }

TEST(MemoryReuse, LargeBlocksComeFromTheHeapAndStayThereAfterFree) {
  ASSERT_TRUE(burst::util::keep_freed_memory_for_reuse());
  const size_t mapped_before = mapped_bytes();
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);
  EXPECT_EQ(mapped_bytes(), mapped_before);  // not an mmapped chunk
  std::free(block);
  // Not trimmed: the heap's free space still holds the block.
  EXPECT_GE(mallinfo2().fordblks, kBlock);
}

}  // namespace
#endif
