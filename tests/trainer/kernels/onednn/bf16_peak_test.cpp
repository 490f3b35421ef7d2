// bf16_peak.hpp: the VDPBF16PS-vs-FMA measurement runs exactly where the CPU has AVX512-BF16,
// gives physical rates, and is phrased with both rates and their ratio. No check depends on
// how fast this CPU is.
#include <catch2/catch.hpp>

#include <string>

#include "trainer/kernels/onednn/bf16_peak.hpp"

using namespace dlsweep::trainer::kernels;

TEST_CASE("the bf16 instruction's peak is measured where the CPU has AVX512-BF16, and nowhere else", "[kernels][bf16]") {
  const Bf16Peak p = measure_bf16_peak();
  const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  INFO(describe(p));
  REQUIRE(p.measured == has);
  if (!has) {
    CHECK(p.ratio() == 0);
    CHECK(describe(p).empty());
    return;
  }
  // A core does between 1 and 1000 GFLOP/s of either; the ratio of two instructions of the
  // same width is a small factor either way (0.5 and about 2 on the CPUs measured).
  CHECK(p.fp32_gflops > 1);
  CHECK(p.fp32_gflops < 1000);
  CHECK(p.bf16_gflops > 1);
  CHECK(p.bf16_gflops < 2000);
  CHECK(p.ratio() > 0.1);
  CHECK(p.ratio() < 10);
}

TEST_CASE("the peak is described with both rates and their ratio", "[kernels][bf16]") {
  Bf16Peak p;
  CHECK(describe(p).empty());  // not measured: nothing to say
  CHECK(p.ratio() == 0);
  p.measured = true;
  p.fp32_gflops = 178.9;
  p.bf16_gflops = 86.6;
  CHECK(p.ratio() == Approx(0.484).epsilon(0.01));
  const std::string d = describe(p);
  CHECK(d.find("VDPBF16PS") != std::string::npos);
  CHECK(d.find("0.48x") != std::string::npos);
  CHECK(d.find("86.6 vs 178.9 GFLOP/s") != std::string::npos);
}
