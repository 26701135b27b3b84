#include "plugin/state_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

TEST(Fnv1a64, PublishedTestVectors) {
  // From the FNV reference test suite (Fowler/Noll/Vo, "FNV-1a 64 bit").
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(NcclConfFileName, SixteenHexDigitsOfTheContentHash) {
  const std::string content = "NCCL_IB_HCA==mlx5_1:1\n";
  const std::string name = ncclConfFileName(content);
  ASSERT_EQ(name.size(), std::string("nccl-.conf").size() + 16) << name;
  std::ostringstream hex;
  hex << std::hex;
  hex.width(16);
  hex.fill('0');
  hex << fnv1a64(content);
  EXPECT_EQ(name, "nccl-" + hex.str() + ".conf");
  EXPECT_NE(ncclConfFileName(content), ncclConfFileName("NCCL_IB_HCA==mlx5_2:1\n"));
}

TEST(StateWriter, WritesTheConfOnceUnderItsContentName) {
  TempDir tmp;
  StateWriter writer(tmp.path() + "/state");
  ASSERT_TRUE(writer.prepare().ok());
  const std::string content = "NCCL_IB_HCA==mlx5_5:1\nNCCL_IB_DISABLE=0\n";
  auto path = writer.writeNcclConf(content);
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(std::filesystem::path(*path).filename(), ncclConfFileName(content));
  std::ifstream in(*path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), content);
  auto again = writer.writeNcclConf(content);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *path);
}

} // namespace
} // namespace kube_rdma
