#include "rdmactl/cli.h"

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

TEST(RdmactlCli, EveryCommandAndItsDefaults) {
  auto opts = parseRdmactlArgs({"devices"});
  ASSERT_TRUE(opts.ok()) << opts.error().message;
  EXPECT_EQ(opts->command, RdmactlCommand::kDevices);
  EXPECT_EQ(opts->sysfs_root, "/sys");
  EXPECT_EQ(opts->proc_root, "/proc");
  EXPECT_EQ(opts->dev_root, "/dev");
  EXPECT_FALSE(opts->json);
  EXPECT_EQ(opts->exit_message, "");
  auto gids = parseRdmactlArgs({"gids"});
  ASSERT_TRUE(gids.ok()) << gids.error().message;
  EXPECT_EQ(gids->command, RdmactlCommand::kGids);
  EXPECT_EQ(gids->device, "");
  auto nccl = parseRdmactlArgs({"nccl-env", "--pool", "rdma/shared", "--config=/c.json"});
  ASSERT_TRUE(nccl.ok()) << nccl.error().message;
  EXPECT_EQ(nccl->command, RdmactlCommand::kNcclEnv);
  EXPECT_EQ(nccl->pool, "rdma/shared");
  EXPECT_EQ(nccl->config, "/c.json");
  auto doctor = parseRdmactlArgs({"doctor", "--json"});
  ASSERT_TRUE(doctor.ok()) << doctor.error().message;
  EXPECT_EQ(doctor->command, RdmactlCommand::kDoctor);
  EXPECT_TRUE(doctor->json);
}

TEST(RdmactlCli, HelpInEveryFormAndVersion) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"help"}, {"-h"}, {"--sysfs-root=/x", "help"}}) {
    auto opts = parseRdmactlArgs(args);
    ASSERT_TRUE(opts.ok()) << opts.error().message;
    EXPECT_NE(opts->exit_message.find("Usage: rdmactl"), std::string::npos) << opts->exit_message;
    EXPECT_NE(opts->exit_message.find("nccl-env"), std::string::npos) << opts->exit_message;
  }
  auto command_help = parseRdmactlArgs({"nccl-env", "--help"});
  ASSERT_TRUE(command_help.ok()) << command_help.error().message;
  EXPECT_NE(command_help->exit_message.find("--pool NAME"), std::string::npos)
      << command_help->exit_message;
  auto version = parseRdmactlArgs({"--version"});
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_EQ(version->exit_message.rfind("rdmactl ", 0), 0u) << version->exit_message;
}

TEST(RdmactlCli, ErrorsNameTheArgument) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "A subcommand is required"},
      {{"frobnicate"}, "unknown command: frobnicate"},
      {{"--json", "frobnicate", "--sysfs-root=/x"}, "unknown command: frobnicate"},
      {{"devices", "--sysfs-root"}, "--sysfs-root: 1 required DIR missing"},
      {{"devices", "--sysfs-root="}, "--sysfs-root: 1 required DIR missing"},
      {{"devices", "--sysfs-root", ""}, "--sysfs-root: needs a directory"},
      {{"nccl-env", "--pool="}, "--pool: 1 required NAME missing"},
      {{"devices", "--colour", "red"}, "unexpected arguments: --colour red"},
      {{"devices", "extra"}, "unexpected argument: extra"},
      {{"gids", "mlx5_0", "mlx5_1"}, "unexpected argument: mlx5_1"},
      // --pool belongs to nccl-env; gids takes rdma/hca as its device.
      {{"gids", "--pool", "rdma/hca"}, "unexpected argument: --pool"},
  };
  for (const auto& [args, want] : cases) {
    auto r = parseRdmactlArgs(args);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_EQ(r.error().message.rfind(want, 0), 0u) << r.error().message;
  }
}

} // namespace
} // namespace kube_rdma
