// augment.hpp — the standard CIFAR training augmentation (He et al. 2016, sec. 4.2):
// pad each side by 4 pixels, take a random crop of the original size, flip horizontally
// with probability 1/2. Applied while a batch is gathered, to the training split only.
//
// Determinism: sample `index` in `epoch` draws its offsets and flip from the SplitMix64
// stream (seed, kStreamAugment, epoch·2^32 + index), so the augmented batch depends only on
// (seed, epoch, indices), not on batch size, rank count or call order.
// Padding is 0 in the stored (normalised) space, i.e. the training set's mean colour.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

inline constexpr std::int64_t kAugmentPad = 4;

/// The crop offset (dy, dx in [0, 2·pad]) and flip drawn for (seed, epoch, index).
struct CropFlip {
  std::int64_t dy = 0, dx = 0;
  bool flip = false;
};
CropFlip draw_crop_flip(std::uint64_t seed, std::int64_t epoch, std::uint32_t index);

/// Writes sample `src` ([c, h, w]) cropped at (dy, dx) of its zero-padded image and flipped
/// when asked, into `dst` (c·h·w floats).
void crop_flip(const float* src, std::int64_t c, std::int64_t h, std::int64_t w, const CropFlip& cf, float* dst);

/// gather() with augmentation: requires an image dataset (height, width > 0).
void gather_augmented(const Dataset& d, std::span<const std::uint32_t> indices, std::int64_t epoch,
                      kernels::MatrixView x, std::int32_t* labels);

}  // namespace dlsweep::trainer::data
