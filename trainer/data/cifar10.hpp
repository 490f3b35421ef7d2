// cifar10.hpp — loads CIFAR-10 in its binary format ("CIFAR-10 binary version",
// cs.toronto.edu/~kriz/cifar.html): data_batch_1.bin … data_batch_5.bin (training),
// test_batch.bin (test); each file a sequence of 3073-byte records: one label byte (0-9),
// then 3072 pixel bytes — the red, green and blue 32x32 planes, rows top to bottom — which
// is exactly the CHW order the trainer stores. Pixels become floats in [0, 1].
// Checks: every file present, non-empty and a whole number of records (a short file names
// how many bytes are missing), labels below 10. The official files hold 10000 records each;
// any whole number is accepted (tests write small ones).
#pragma once

#include <cstdint>
#include <filesystem>

#include "common/result.hpp"
#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

inline constexpr std::int64_t kCifarSide = 32, kCifarChannels = 3, kCifarClasses = 10;
inline constexpr std::int64_t kCifarRecord = 1 + kCifarChannels * kCifarSide * kCifarSide;  // 3073 bytes

/// The directory used when params.json has no data_dir: $DLSWEEP_CIFAR10_DIR (empty if unset).
std::filesystem::path default_cifar10_dir();

/// Loads the training split (data_batch_1..5.bin) or the test split (test_batch.bin) from
/// `dir`, or from dir/cifar-10-batches-bin when the files are there (the archive's layout).
/// `max_items` > 0 reads only the first items (in file order).
Result<Dataset> load_cifar10_split(const std::filesystem::path& dir, bool train, std::int64_t max_items = 0);

}  // namespace dlsweep::trainer::data
