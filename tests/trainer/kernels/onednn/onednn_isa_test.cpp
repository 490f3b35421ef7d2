// What oneDNN reports about this CPU (its ISA, native bf16) is asked of oneDNN and consistent,
// under every DNNL_MAX_CPU_ISA cap the ISA-capped ctest runs set.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "trainer/kernels/onednn/onednn_isa.hpp"

using namespace dlsweep::trainer::kernels;

TEST_CASE("oneDNN's ISA and bf16 capability are asked of oneDNN and agree with each other", "[kernels][isa]") {
  const std::string isa = onednn_isa_name();
  INFO("oneDNN isa " << isa);
  CHECK(isa != "other");
  const bool below_bf16 = isa == "sse41" || isa == "avx" || isa == "avx2" || isa == "avx2_vnni" ||
                          isa == "avx512_core" || isa == "avx512_core_vnni";
  if (below_bf16) CHECK_FALSE(onednn_has_native_bf16());
  // A cap set by the environment is honoured (the ISA-capped ctest runs set it).
  if (const char* cap = std::getenv("DNNL_MAX_CPU_ISA"); cap && std::string(cap) == "AVX2")
    CHECK((isa == "avx2" || isa == "avx" || isa == "sse41"));
  // The path bf16 takes follows the capability, and the description says which it is.
  const std::string d = bf16_path_description();
  const std::string path(bf16_path_name());
  CHECK(path == (onednn_has_native_bf16() ? "native" : "emulated"));
  CHECK(d.rfind("bf16 " + path, 0) == 0);
  CHECK(d.find(isa) != std::string::npos);
}
