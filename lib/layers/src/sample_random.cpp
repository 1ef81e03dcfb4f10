#include "burst/layers/sample_random.h"

#include <cmath>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/splitmix.h"

namespace burst::layers {
namespace {

// The Philox key of one layer's draws in one step of a run.
uint64_t philox_key(const RandomKey& key, graph::LayerId layer) {
  return util::derive_seed(util::derive_seed(key.seed, static_cast<uint64_t>(key.step)), static_cast<uint64_t>(layer));
}

template <typename Scalar>
void fill_mask(Scalar* mask, int64_t rows, int64_t per_row, double p, uint64_t key, int64_t first_sample) {
  // Kept iff the 32-bit draw r < (1 - p) * 2^32, i.e. a uniform r / 2^32 in [0, 1) below 1 - p.
  const uint64_t threshold = static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
  const auto scale = static_cast<Scalar>(1.0 / (1.0 - p));
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // Subsequence: the global sample index; offset 0: element j is the j-th word drawn.
      at::Philox4_32 engine(key, static_cast<uint64_t>(first_sample + row), 0);
      Scalar* out = mask + row * per_row;
      for (int64_t j = 0; j < per_row; ++j) out[j] = static_cast<uint64_t>(engine()) < threshold ? scale : Scalar(0);
    }
  });
}

}  // namespace

torch::Tensor sample_dropout_mask(const torch::Tensor& x, double p, const RandomKey& key, graph::LayerId layer) {
  BURST_ASSERT(p >= 0 && p < 1, fmt::format("dropout probability must be in [0, 1), got {}", p));
  BURST_ASSERT(x.dim() >= 1 && x.is_floating_point(), "dropout takes a floating point [B, ...] tensor");
  torch::Tensor mask = torch::empty(x.sizes(), x.options().requires_grad(false).memory_format(at::MemoryFormat::Contiguous));
  const int64_t rows = x.size(0);
  const int64_t per_row = rows == 0 ? 0 : x.numel() / rows;
  const uint64_t philox = philox_key(key, layer);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sample_dropout_mask", [&] {
    fill_mask(mask.data_ptr<scalar_t>(), rows, per_row, p, philox, key.first_sample);
  });
  return mask;
}

torch::Tensor sample_dropout(const torch::Tensor& x, double p, const RandomKey& key, graph::LayerId layer) {
  if (p == 0) return x;
  return x * sample_dropout_mask(x, p, key, layer);
}

}  // namespace burst::layers
