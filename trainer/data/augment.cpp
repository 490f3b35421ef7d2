#include "trainer/data/augment.hpp"

#include <algorithm>
#include <vector>
#include <stdexcept>

#include "trainer/rng.hpp"

namespace dlsweep::trainer::data {

CropFlip draw_crop_flip(std::uint64_t seed, std::int64_t epoch, std::uint32_t index) {
  SplitMix64 rng(stream_seed(seed, kStreamAugment, (static_cast<std::uint64_t>(epoch) << 32) | index));
  CropFlip cf;
  cf.dy = static_cast<std::int64_t>(rng.below(2 * kAugmentPad + 1));
  cf.dx = static_cast<std::int64_t>(rng.below(2 * kAugmentPad + 1));
  cf.flip = (rng.next() >> 63) != 0;
  return cf;
}

void crop_flip(const float* src, std::int64_t c, std::int64_t h, std::int64_t w, const CropFlip& cf, float* dst) {
  // The crop C(y, x) = input(y + dy - pad, x + dx - pad) (0 outside the image), then, when
  // flipping, output(y, x) = C(y, w-1-x).
  const std::int64_t oy = cf.dy - kAugmentPad, ox = cf.dx - kAugmentPad;
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float* in = src + ch * h * w;
    float* out = dst + ch * h * w;
    for (std::int64_t y = 0; y < h; ++y) {
      float* row = out + y * w;
      const std::int64_t sy = y + oy;
      if (sy < 0 || sy >= h) {
        std::fill(row, row + w, 0.0f);
        continue;
      }
      const float* srow = in + sy * w;
      // Columns x whose source sx = x + ox lies inside [0, w).
      const std::int64_t lo = std::max<std::int64_t>(0, -ox), hi = std::min<std::int64_t>(w, w - ox);
      std::fill(row, row + w, 0.0f);
      if (!cf.flip) {
        if (lo < hi) std::copy(srow + lo + ox, srow + hi + ox, row + lo);
      } else {
        for (std::int64_t x = lo; x < hi; ++x) row[w - 1 - x] = srow[x + ox];
      }
    }
  }
}

void gather_augmented(const Dataset& d, std::span<const std::uint32_t> indices, std::int64_t epoch,
                      kernels::MatrixView x, std::int32_t* labels) {
  if (d.height < 1 || d.width < 1) throw std::logic_error("gather_augmented: not an image dataset");
  std::vector<float> scratch(d.byte_backed() ? static_cast<std::size_t>(d.features) : 0);
  for (std::size_t r = 0; r < indices.size(); ++r) {
    const std::uint32_t i = indices[r];
    const float* src = d.byte_backed() ? (d.copy_sample(i, scratch.data()), scratch.data()) : d.sample(i);
    crop_flip(src, d.channels, d.height, d.width, draw_crop_flip(d.augment_seed, epoch, i),
              x.row(static_cast<std::int64_t>(r)));
    labels[r] = d.labels[i];
  }
}

}  // namespace dlsweep::trainer::data
