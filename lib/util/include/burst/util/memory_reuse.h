#pragma once
// Keeps the process's freed heap memory for reuse instead of handing it back to the kernel.
//
// A training step allocates the same large tensors (activations, gradients) every step and
// frees them at its end. glibc's malloc serves such blocks with mmap and returns them with
// munmap (or trims the heap top), so every step pays again for the kernel to map and zero
// fresh pages: on the 2-core development machine that was 1.8 s of 6 s of a vgg_like run
// (`/usr/bin/time`, system time) and about a third of a step (docs/runtime.md, "Memory reuse").
// PyTorch users get the same effect from jemalloc or tcmalloc; this is the dependency-free
// form: serve every block from the heap and never trim it. Memory is held at the run's peak.
//
// Process-wide (malloc's settings); call once before the first large allocation. Returns
// false where the C library has no such settings (not glibc): then nothing changed.
namespace burst::util {

bool keep_freed_memory_for_reuse();

}  // namespace burst::util
