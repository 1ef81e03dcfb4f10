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

// Kept iff the 32-bit draw r < (1 - p) * 2^32, i.e. a uniform r / 2^32 in [0, 1) below 1 - p.
uint64_t keep_threshold(double p) { return static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0)); }

// Writes `count` mask values for words [first, first + count) of sample `sample`'s stream.
template <typename Scalar>
void fill_run(Scalar* out, int64_t count, uint64_t key, int64_t sample, int64_t first, uint64_t threshold,
              Scalar scale) {
  // Element j is word j mod 4 of Philox block j / 4: start at block first / 4, skip the rest.
  at::Philox4_32 engine(key, static_cast<uint64_t>(sample), static_cast<uint64_t>(first / 4));
  for (int64_t skip = 0; skip < first % 4; ++skip) engine();
  for (int64_t j = 0; j < count; ++j) out[j] = static_cast<uint64_t>(engine()) < threshold ? scale : Scalar(0);
}

// mask: rows x per_row values; each row a sample's elements, or, under a slice (`window`:
// key.features > 0), runs of `width` elements, run t starting at element t x features +
// feature_begin of the whole sample.
template <typename Scalar>
void fill_mask(Scalar* mask, int64_t rows, int64_t per_row, int64_t width, double p, uint64_t philox,
               const RandomKey& key) {
  const uint64_t threshold = keep_threshold(p);
  const auto scale = static_cast<Scalar>(1.0 / (1.0 - p));
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      Scalar* out = mask + row * per_row;
      const int64_t sample = key.first_sample + row;
      if (key.features == 0) {
        fill_run(out, per_row, philox, sample, 0, threshold, scale);
        continue;
      }
      for (int64_t t = 0; t * width < per_row; ++t) {
        fill_run(out + t * width, width, philox, sample, t * key.features + key.feature_begin, threshold, scale);
      }
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
  const int64_t width = x.dim() >= 2 ? x.size(-1) : 1;
  BURST_ASSERT(key.features == 0 || (width > 0 && key.feature_begin + width <= key.features),
               "a slice's features lie inside the whole sample's");
  const uint64_t philox = philox_key(key, layer);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "sample_dropout_mask", [&] {
    fill_mask(mask.data_ptr<scalar_t>(), rows, per_row, width, p, philox, key);
  });
  return mask;
}

torch::Tensor sample_dropout(const torch::Tensor& x, double p, const RandomKey& key, graph::LayerId layer) {
  if (p == 0) return x;
  return x * sample_dropout_mask(x, p, key, layer);
}

}  // namespace burst::layers
