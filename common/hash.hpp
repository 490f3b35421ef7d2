// hash.hpp — 64-bit FNV-1a, the hash the samplers mix into their per-trial random streams
// (search/random_sampler.cpp, search/tpe_sampler.cpp). Part of the resume-determinism
// contract: `dlsweep resume` re-draws exactly the trials a sampler drew before, so this one
// copy is pinned by the static_asserts below — an edit that changes a value fails to compile
// instead of changing what resume re-draws.
#pragma once

#include <cstdint>
#include <string_view>

namespace dlsweep {

constexpr std::uint64_t fnv1a64(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

static_assert(fnv1a64("") == 0xcbf29ce484222325ULL);
static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
static_assert(fnv1a64("\x01joint") == 0x4ea25152db88c7e8ULL);  // tpe_sampler's joint stream

}  // namespace dlsweep
