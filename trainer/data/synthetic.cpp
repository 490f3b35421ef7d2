#include "trainer/data/synthetic.hpp"

#include "trainer/rng.hpp"

namespace dlsweep::trainer::data {

namespace {

inline float unit_float(SplitMix64& rng) { return static_cast<float>(rng.next() >> 40) * 0x1.0p-24f; }

Dataset generate(const SyntheticSpec& spec, const std::vector<float>& protos, std::int64_t size,
                 std::uint64_t stream, const char* split) {
  Dataset d;
  d.name = std::string("synthetic/") + split;
  d.size = size;
  d.features = spec.features;
  d.classes = spec.classes;
  d.channels = spec.channels;
  d.height = spec.height;
  d.width = spec.width;
  d.images.resize(static_cast<std::size_t>(size * spec.features));
  d.labels.resize(static_cast<std::size_t>(size));
  SplitMix64 rng(stream_seed(spec.seed, kStreamSynthetic, stream));
  for (std::int64_t i = 0; i < size; ++i) {
    const auto c = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(spec.classes)));
    d.labels[static_cast<std::size_t>(i)] = c;
    const float* p = protos.data() + c * spec.features;
    float* x = d.images.data() + i * spec.features;
    for (std::int64_t f = 0; f < spec.features; ++f) x[f] = 0.5f * p[f] + 0.5f * unit_float(rng);
  }
  return d;
}

}  // namespace

DataSplits make_synthetic(const SyntheticSpec& spec) {
  std::vector<float> protos(static_cast<std::size_t>(spec.classes * spec.features));
  SplitMix64 rng(stream_seed(spec.seed, kStreamSynthetic, 0));
  for (float& v : protos) v = unit_float(rng);
  DataSplits s;
  s.train = generate(spec, protos, spec.train_size, 1, "train");
  s.test = generate(spec, protos, spec.test_size, 2, "test");
  return s;
}

}  // namespace dlsweep::trainer::data
