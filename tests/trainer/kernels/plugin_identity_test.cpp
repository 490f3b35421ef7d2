// The CUDA plugin's interface check (kernels/plugin_identity.hpp): a plugin loads only when its
// interface fingerprint is this dlsweep-train's, and a refusal names the file, both
// fingerprints and both builds. This build's identity is the generated one
// (cmake/plugin_fingerprint.cmake).
#include <catch2/catch.hpp>

#include <cctype>
#include <string>

#include "trainer/kernels/plugin_identity.hpp"

namespace k = dlsweep::trainer::kernels;

TEST_CASE("plugin identity: equal fingerprints load, whatever the builds say", "[plugin]") {
  const k::PluginIdentity ours{"0123456789abcdef", "dlsweep 0.1.0, Release build in /a"};
  CHECK(k::check_plugin_identity(ours, k::PluginIdentity{"0123456789abcdef", "dlsweep 0.1.0, Debug build in /c"}, "/p.so"));
}

TEST_CASE("plugin identity: another interface is refused naming both builds", "[plugin]") {
  const k::PluginIdentity ours{"0123456789abcdef", "dlsweep 0.1.0, Release build in /a"};
  const k::PluginIdentity theirs{"fedcba9876543210", "dlsweep 0.1.0, Debug build in /b"};
  auto s = k::check_plugin_identity(ours, theirs, "/opt/lib/dlsweep/libdlsweep-cuda.so");
  REQUIRE_FALSE(s);
  const auto& e = s.error();
  INFO(e.what);
  CHECK(e.is(dlsweep::ErrorKind::resources));  // another install may have the right one: not bad input
  CHECK(e.where == "device");
  CHECK(e.what.find("/opt/lib/dlsweep/libdlsweep-cuda.so") != std::string::npos);
  CHECK(e.what.find("fedcba9876543210") != std::string::npos);
  CHECK(e.what.find("0123456789abcdef") != std::string::npos);
  CHECK(e.what.find("Debug build in /b") != std::string::npos);
  CHECK(e.what.find("Release build in /a") != std::string::npos);
  CHECK(e.fix.find("DLSWEEP_CUDA_PLUGIN") != std::string::npos);
  CHECK(e.fix.find("dlsweep-cuda") != std::string::npos);
}

TEST_CASE("plugin identity: a plugin without a fingerprint (older) is refused", "[plugin]") {
  const k::PluginIdentity ours{"0123456789abcdef", "dlsweep 0.1.0, Release build in /a"};
  auto s = k::check_plugin_identity(ours, std::nullopt, "/x/libdlsweep-cuda.so");
  REQUIRE_FALSE(s);
  CHECK(s.error().what.find("no interface fingerprint") != std::string::npos);
  CHECK(s.error().what.find("0123456789abcdef") != std::string::npos);
  // An empty fingerprint is not a match either.
  CHECK_FALSE(k::check_plugin_identity(ours, k::PluginIdentity{"", ""}, "/x/libdlsweep-cuda.so"));
}

TEST_CASE("plugin identity: this build's fingerprint is generated from its headers", "[plugin]") {
  const k::PluginIdentity me = k::this_build_identity();
  REQUIRE(me.fingerprint.size() == 16);
  for (char c : me.fingerprint) CHECK(std::isxdigit(static_cast<unsigned char>(c)));
  CHECK(me.build.rfind("dlsweep " DLSWEEP_VERSION ", ", 0) == 0);
  CHECK(me.build.find(" build in ") != std::string::npos);
  CHECK(k::check_plugin_identity(me, me, "self"));
}

#include "tests/trainer/process_util.hpp"

namespace {

// The fingerprint cmake/plugin_fingerprint.cmake computes for the tree at `src`.
std::string fingerprint_of(const std::filesystem::path& src) {
  const auto out = src / "out" / "fp.hpp";
  auto p = dlsweep::trainer::test::spawn({DLSWEEP_CMAKE, "-DSRC=" + src.string(), "-DOUT=" + out.string(), "-DVERSION=9.9",
                                 "-DBUILD_DIR=/b", "-DBUILD_TYPE=Release",
                                 "-DCONFIGURED=2026-01-01T00:00:00Z", "-P",
                                 std::string(DLSWEEP_SOURCE_DIR) + "/cmake/plugin_fingerprint.cmake"},
                                src / "cmake.out", src / "cmake.err");
  REQUIRE(p.wait() == 0);
  const std::string text = dlsweep::trainer::test::read_file(out);
  const auto at = text.find("DLSWEEP_PLUGIN_FINGERPRINT \"");
  REQUIRE(at != std::string::npos);
  return text.substr(at + 28, 16);
}

}  // namespace

TEST_CASE("plugin fingerprint: every header the plugin reaches outside its folder, and only those", "[plugin]") {
  dlsweep::trainer::test::TempDir tmp;
  const auto& src = tmp.path();
  std::filesystem::create_directories(src / "trainer/kernels/cuda");
  std::filesystem::create_directories(src / "common");
  using dlsweep::trainer::test::write_file;
  write_file(src / "trainer/kernels/cuda/cuda_plugin.hpp", "// entry points\n");
  write_file(src / "trainer/kernels/cuda/backend.cpp",
             "#include \"trainer/kernels/cuda/inner.hpp\"\n#include <vector>\n#include \"trainer/kernels/iface.hpp\"\n");
  write_file(src / "trainer/kernels/cuda/inner.hpp", "#pragma once\nint inner();\n");
  write_file(src / "trainer/kernels/iface.hpp", "#pragma once\n#include \"common/base.hpp\"\nstruct I { int a; };\n");
  write_file(src / "common/base.hpp", "#pragma once\nstruct Base { int x; };\n");
  write_file(src / "common/unrelated.hpp", "#pragma once\nstruct U {};\n");
  const std::string first = fingerprint_of(src);
  CHECK(fingerprint_of(src) == first);  // stable
  // A class that crosses the boundary changes shape, even two includes away: another fingerprint.
  write_file(src / "common/base.hpp", "#pragma once\nstruct Base { int x; int y; };\n");
  const std::string second = fingerprint_of(src);
  CHECK(second != first);
  write_file(src / "trainer/kernels/iface.hpp", "#pragma once\n#include \"common/base.hpp\"\nstruct I { long a; };\n");
  CHECK(fingerprint_of(src) != second);
  const std::string third = fingerprint_of(src);
  // The plugin's own headers and headers it never includes do not count.
  write_file(src / "trainer/kernels/cuda/inner.hpp", "#pragma once\nint inner(int);\n");
  write_file(src / "common/unrelated.hpp", "#pragma once\nstruct U { int z; };\n");
  CHECK(fingerprint_of(src) == third);
  // The generated header lists what it hashed.
  const std::string text = dlsweep::trainer::test::read_file(src / "out" / "fp.hpp");
  CHECK(text.find("common/base.hpp") != std::string::npos);
  CHECK(text.find("trainer/kernels/iface.hpp") != std::string::npos);
  CHECK(text.find("unrelated") == std::string::npos);
  CHECK(text.find("DLSWEEP_PLUGIN_BUILD \"dlsweep 9.9, Release build in /b configured 2026-01-01T00:00:00Z\"") !=
        std::string::npos);
}

#include <fstream>
#include <iterator>

#include "tests/support/scoped_env.hpp"

TEST_CASE("dlsweep-train refuses a CUDA plugin of another interface, naming both builds", "[plugin][cli]") {
  // The plugin built beside this dlsweep-train (CUDA builds), with its fingerprint rewritten.
  const std::filesystem::path plugin = std::filesystem::path(DLSWEEP_TRAIN_BIN).parent_path() / "libdlsweep-cuda.so";
  if (!std::filesystem::exists(plugin)) {
    WARN("no CUDA plugin in this build: the refusal of a mismatched plugin is not tested");
    return;
  }
  dlsweep::trainer::test::TempDir tmp;
  std::ifstream in(plugin, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string ours = k::this_build_identity().fingerprint, other = "0badc0de0badc0de";
  REQUIRE(ours != other);
  std::size_t replaced = 0;
  for (auto at = bytes.find(ours); at != std::string::npos; at = bytes.find(ours, at + 1), ++replaced)
    bytes.replace(at, ours.size(), other);
  REQUIRE(replaced >= 1);  // the plugin carries this build's fingerprint
  const auto copy = tmp.path() / "libdlsweep-cuda.so";
  dlsweep::trainer::test::write_file(copy, bytes);
  dlsweep::trainer::test::write_file(tmp.path() / "params.json",
                                     R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,)"
                                     R"("batch_size":64,"hidden":[16],"device":"cuda"})");
  test_support::ScopedEnv env("DLSWEEP_CUDA_PLUGIN", copy.string());
  auto p = dlsweep::trainer::test::spawn({DLSWEEP_TRAIN_BIN, "--trial-dir", tmp.path().string()}, tmp.path() / "out.txt",
                                         tmp.path() / "err.txt");
  const int code = p.wait();
  const std::string err = dlsweep::trainer::test::read_file(tmp.path() / "err.txt");
  INFO(err);
  if (err.find("cannot load") != std::string::npos) {
    WARN("the plugin does not load on this host (its CUDA libraries): the refusal is not tested");
    return;
  }
  CHECK(code == 1);  // what this node lacks (the right plugin), not bad input
  CHECK(err.find("built against another interface") != std::string::npos);
  CHECK(err.find(other) != std::string::npos);
  CHECK(err.find(ours) != std::string::npos);
  CHECK(err.find("plugin fingerprint " + other + " (" + k::this_build_identity().build + ")") != std::string::npos);
  CHECK(err.find("this dlsweep-train's " + ours + " (" + k::this_build_identity().build + ")") != std::string::npos);
}
