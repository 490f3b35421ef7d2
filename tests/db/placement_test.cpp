// placement_test.cpp — which filesystem --db is on (fs_kind), the mode chosen for it
// (placement: DLSWEEP_DB_MODE), the live copy's path and the one line that says so.
#include <catch2/catch.hpp>

#include <sys/vfs.h>

#include "db/fs_kind.hpp"
#include "db/placement.hpp"
#include "db_test_support.hpp"

using namespace dlsweep::db;

TEST_CASE("classify_fs_magic: shared filesystems by statfs f_type") {
  struct Case {
    std::uint64_t magic;
    const char* name;
  };
  for (auto c : {Case{0x6969, "nfs"}, Case{0x0BD00BD0, "lustre"}, Case{0x47504653, "gpfs"},
                 Case{0x19830326, "beegfs"}, Case{0x00C36400, "cephfs"}, Case{0xFF534D42, "cifs"},
                 Case{0xFE534D42, "smb2"}, Case{0x65735546, "fuse"}, Case{0x5346414F, "afs"},
                 Case{0x01021997, "9p"}, Case{0xAAD7AAEA, "panfs"}}) {
    INFO(c.name);
    auto k = classify_fs_magic(c.magic);
    CHECK(k.name == c.name);
    CHECK(k.shared);
  }
}

TEST_CASE("classify_fs_magic: local filesystems and unknown types stay local") {
  for (std::uint64_t m : {0xEF53ull, 0x58465342ull, 0x9123683Eull, 0x01021994ull, 0x794C7630ull, 0x2FC12FC1ull}) {
    INFO(m);
    CHECK_FALSE(classify_fs_magic(m).shared);
  }
  CHECK(classify_fs_magic(0xEF53).name == "ext4/ext3/ext2");
  auto u = classify_fs_magic(0x12345678);
  CHECK_FALSE(u.shared);
  CHECK(u.name == "unknown (0x12345678)");
  // f_type is a signed word: a sign-extended magic is the same filesystem.
  CHECK(classify_fs_magic(0xFFFFFFFFFF534D42ull).name == "cifs");
}

TEST_CASE("probe_fs: the filesystem of a path, or of its nearest existing parent") {
  testing::TempDir dir;
  struct statfs st {};
  REQUIRE(::statfs(dir.path().c_str(), &st) == 0);
  auto here = probe_fs(dir / "not-yet" / "sweep.db");
  REQUIRE(here.has_value());
  CHECK(here->magic == (static_cast<std::uint64_t>(st.f_type) & 0xFFFFFFFFu));
}

TEST_CASE("choose_placement: the filesystem decides, DLSWEEP_DB_MODE forces") {
  const auto nfs = classify_fs_magic(0x6969), ext4 = classify_fs_magic(0xEF53);
  CHECK(choose_placement(nfs, "")->mode == DbMode::snapshot);
  CHECK(choose_placement(nfs, "auto")->mode == DbMode::snapshot);
  CHECK(choose_placement(ext4, "")->mode == DbMode::direct);
  CHECK_FALSE(choose_placement(ext4, "")->forced);
  auto forced = choose_placement(ext4, "snapshot");
  CHECK(forced->mode == DbMode::snapshot);
  CHECK(forced->forced);
  CHECK(choose_placement(nfs, "direct")->mode == DbMode::direct);
  auto bad = choose_placement(ext4, "wal");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message().find("DLSWEEP_DB_MODE") != std::string::npos);
  CHECK(bad.error().message().find("snapshot") != std::string::npos);
}

TEST_CASE("live_path_for: per user, per database path, on the local base dir") {
  auto a = live_path_for("/scratch/me/sweep.db", "/tmp", 1000);
  auto b = live_path_for("/home/me/sweep.db", "/tmp", 1000);
  CHECK(a.parent_path() == "/tmp/dlsweep-1000");
  CHECK(a.filename().string().ends_with("-sweep.db"));
  CHECK(a != b);
  CHECK(a == live_path_for("/scratch/me/./sweep.db", "/tmp", 1000));
  CHECK(live_path_for("/scratch/me/sweep.db", "/tmp", 1001).parent_path() == "/tmp/dlsweep-1001");
}

TEST_CASE("placement_note: one line on a shared filesystem, nothing on a local disk") {
  auto local = *choose_placement(classify_fs_magic(0xEF53), "");
  CHECK(placement_note(local, "/x/sweep.db", "").empty());
  auto lustre = *choose_placement(classify_fs_magic(0x0BD00BD0), "");
  auto writer = placement_note(lustre, "/lus/sweep.db", "/tmp/dlsweep-1/ab-sweep.db");
  CHECK(writer.find("lustre") != std::string::npos);
  CHECK(writer.find("/tmp/dlsweep-1/ab-sweep.db") != std::string::npos);
  CHECK(writer.find('\n') == std::string::npos);
  auto reader = placement_note(lustre, "/lus/sweep.db", "");
  CHECK(reader.find("snapshot") != std::string::npos);
  auto direct = *choose_placement(classify_fs_magic(0x6969), "direct");
  CHECK(placement_note(direct, "/nfs/sweep.db", "").starts_with("warning:"));
}
