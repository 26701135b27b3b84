#include "plugin/rdmactl/cli.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(RdmactlCli, GlobalFlagsBeforeOrAfterTheCommand) {
  auto opts = parseRdmactlArgs({"--sysfs-root", "/x/sys", "--json", "gids", "mlx5_1",
                                "--proc-root=/x/proc", "--dev-root", "/x/dev"});
  ASSERT_TRUE(opts.ok()) << opts.error().message;
  EXPECT_EQ(opts->command, RdmactlCommand::kGids);
  EXPECT_EQ(opts->sysfs_root, "/x/sys");
  EXPECT_EQ(opts->proc_root, "/x/proc");
  EXPECT_EQ(opts->dev_root, "/x/dev");
  EXPECT_EQ(opts->device, "mlx5_1");
  EXPECT_TRUE(opts->json);
}

TEST(RdmactlCli, Defaults) {
  auto opts = parseRdmactlArgs({"devices"});
  ASSERT_TRUE(opts.ok());
  EXPECT_EQ(opts->sysfs_root, "/sys");
  EXPECT_EQ(opts->proc_root, "/proc");
  EXPECT_EQ(opts->dev_root, "/dev");
  EXPECT_FALSE(opts->json);
  auto pool = parseRdmactlArgs({"nccl-env", "--pool", "rdma/shared"});
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->pool, "rdma/shared");
  EXPECT_EQ(parseRdmactlArgs({"--help"})->command, RdmactlCommand::kHelp);
}

TEST(RdmactlCli, ErrorsNameTheArgument) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no command"},
      {{"frobnicate"}, "\"frobnicate\""},
      {{"devices", "--sysfs-root"}, "--sysfs-root needs a value"},
      {{"devices", "--sysfs-root="}, "--sysfs-root needs a non-empty value"},
      {{"devices", "--colour", "red"}, "unknown flag --colour"},
      {{"devices", "extra"}, "\"extra\""},
      {{"gids", "mlx5_0", "mlx5_1"}, "\"mlx5_0\""},
      {{"gids", "--pool", "rdma/hca"}, "nccl-env only"},
  };
  for (const auto& [args, want] : cases) {
    auto r = parseRdmactlArgs(args);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  }
}

} // namespace
} // namespace kube_rdma
