// Hands nccl.conf files to the real libnccl.so.2 and reads back what NCCL did with them
// (test/libnccl_run.h): its own INFO log and the environment it set. scripts/test.sh runs them
// against the NCCL 2.28 that scripts/setup.sh --tests installs from PyPI's nvidia-nccl-cu13 wheel;
// without a loadable libnccl they skip, saying why.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/pools/nccl_settings.h"
#include "common/pools/pools.h"
#include "common/node/sysfs_discovery.h"
#include "test/libnccl_run.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

class LibNcclConf : public testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/kube-rdma-libnccl-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path writeConf(const std::string& text) {
    fs::path path = dir_ / "nccl.conf";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  NcclRun run(const fs::path& conf, const NcclEnv& env, const std::vector<std::string>& names) {
    Result<NcclRun> r = runNcclGetUniqueId(dir_, conf, env, names);
    if (r.ok()) {
      return *r;
    }
    ADD_FAILURE() << r.error().message;
    NcclRun failed; // not skipped: the failure must show
    failed.nccl_found = true;
    return failed;
  }

  fs::path dir_;
};

#define SKIP_WITHOUT_NCCL(run)                                                                     \
  if (!(run).nccl_found) {                                                                         \
    GTEST_SKIP() << "skipped, no libnccl: " << (run).load_error                                    \
                 << " (scripts/test.sh installs NCCL and sets " << kLibncclVariable << ")";        \
  }

TEST_F(LibNcclConf, NcclTakesTheValuesOfOurRenderedFile) {
  // NCCL_DEBUG comes from the file too: any INFO line at all proves NCCL read it.
  const NcclEnv settings{{"NCCL_DEBUG", "INFO"},
                         {"NCCL_SOCKET_IFNAME", "lo"},
                         {"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"},
                         {"NCCL_IB_DISABLE", "0"},
                         {"KUBE_RDMA_DEVICES", "mlx5_1,mlx5_2"}};
  auto text = renderNcclConf(settings);
  ASSERT_TRUE(text.ok()) << text.error().message;
  const NcclRun r =
      run(writeConf(*text), {},
          {"NCCL_IB_HCA", "NCCL_IB_DISABLE", "KUBE_RDMA_DEVICES", "NCCL_SOCKET_IFNAME"});
  SKIP_WITHOUT_NCCL(r);
  EXPECT_EQ(r.unique_id_result, 0) << r.log;
  EXPECT_NE(r.log.find("NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("Bootstrap: Using lo:"), std::string::npos) << r.log;
  // NCCL setenv()s every line verbatim, the exact-match '=' of NCCL_IB_HCA included.
  EXPECT_EQ(r.env.at("NCCL_IB_HCA"), "=mlx5_1:1,mlx5_2:1");
  EXPECT_EQ(r.env.at("NCCL_IB_DISABLE"), "0");
  EXPECT_EQ(r.env.at("KUBE_RDMA_DEVICES"), "mlx5_1,mlx5_2");
}

TEST_F(LibNcclConf, NcclTakesTheA100NodesAllocateSettingsFromTheMountedFile) {
  // What the plugin hands a container on the guide's node with no config, as its nccl.conf.
  const std::string root = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
  const NodeTopology node = discoverFromSysfs(DiscoveryRoots{root + "/sys", root + "/proc"});
  const std::vector<NodePool> pools = buildPools(node, defaultPluginConfig());
  const NodePool& roce = pools[1];
  ASSERT_EQ(roce.spec.resource_name, "rdma/shared");
  auto env = computeNcclSettings(node, roce, roce.deviceNames());
  ASSERT_TRUE(env.ok()) << env.error().message;
  env->emplace_back("NCCL_DEBUG", "INFO");
  auto text = renderNcclConf(*env);
  ASSERT_TRUE(text.ok()) << text.error().message;
  const NcclRun r = run(writeConf(*text), {}, {"NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME"});
  SKIP_WITHOUT_NCCL(r);
  EXPECT_EQ(r.env.at("NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(r.env.at("NCCL_SOCKET_IFNAME"), "=eth0");
  EXPECT_NE(r.log.find("NCCL_SOCKET_IFNAME set by environment to =eth0\n"), std::string::npos)
      << r.log;
}

TEST_F(LibNcclConf, TheProcessEnvironmentBeatsTheFile) {
  auto text = renderNcclConf({{"NCCL_DEBUG", "INFO"}, {"NCCL_SOCKET_IFNAME", "lo"}});
  ASSERT_TRUE(text.ok());
  const NcclRun r = run(writeConf(*text), {{"NCCL_SOCKET_IFNAME", "=lo"}}, {"NCCL_SOCKET_IFNAME"});
  SKIP_WITHOUT_NCCL(r);
  EXPECT_NE(r.log.find("NCCL_SOCKET_IFNAME set by environment to =lo\n"), std::string::npos)
      << r.log;
  EXPECT_EQ(r.log.find("set by environment to lo\n"), std::string::npos) << r.log;
  EXPECT_EQ(r.env.at("NCCL_SOCKET_IFNAME"), "=lo");
}

TEST_F(LibNcclConf, ParseNcclConfPredictsWhatNcclSets) {
  // Lines NCCL reads in surprising ways; parseNcclConf must agree with the real library.
  const std::string text = "NCCL_DEBUG=INFO\n"
                           "NCCL_T_EQ==x\n"
                           "NCCL_T_SPACE = y\n"
                           "# NCCL_T_COMMENT=z\n"
                           "NCCL_T_CR=1\r\n"
                           "NCCL_T_FIRST=first\n"
                           "NCCL_T_FIRST=second\n"
                           "no equals sign\n"
                           "NCCL_T_TWO=a=b\n"
                           "NCCL_T_LONG=" +
                           std::string(1500, 'v') + "\nNCCL_T_LAST=end";
  const NcclEnv predicted = parseNcclConf(text);
  std::map<std::string, std::string> first_wins;
  for (const auto& [name, value] : predicted) {
    first_wins.emplace(name, value);
  }
  std::vector<std::string> names;
  names.reserve(first_wins.size());
  for (const auto& [name, value] : first_wins) {
    names.push_back(name);
  }
  names.insert(names.end(), {"NCCL_T_COMMENT", "# NCCL_T_COMMENT", "NCCL_T_SPACE"});
  const NcclRun r = run(writeConf(text), {}, names);
  SKIP_WITHOUT_NCCL(r);
  for (const auto& [name, value] : first_wins) {
    EXPECT_EQ(r.env.at(name), value) << name;
  }
  EXPECT_EQ(r.env.at("NCCL_T_COMMENT"), std::nullopt);
  EXPECT_EQ(r.env.at("# NCCL_T_COMMENT"), std::nullopt);
  EXPECT_EQ(r.env.at("NCCL_T_SPACE"), std::nullopt); // the name is "NCCL_T_SPACE " instead
  EXPECT_EQ(first_wins.at("NCCL_T_SPACE "), " y");
  EXPECT_EQ(first_wins.at("NCCL_T_LONG").size(), kNcclConfMaxLength);
  EXPECT_GE(r.version, 22600) << "comment lines are read this way since NCCL 2.26.2";
}

// NCCL_SOCKET_IFNAME values whose reading is easy to get wrong, checked against NCCL's own choice
// of the loopback interface (the one interface every machine has): our parser must select "lo"
// exactly when NCCL bootstraps over it.
TEST_F(LibNcclConf, SocketIfnameParsingAgreesWithNccl) {
  std::string sixteen = "=";
  for (int i = 1; i <= 15; ++i) {
    sixteen += "nosuch" + std::to_string(i) + ",";
  }
  const std::vector<std::string> values = {
      "lo",                    // prefix
      "=lo",                   // exact
      "=l",                    // exact: "l" is not "lo"
      "=^lo",                  // not an exclude list: an exact name "^lo"
      "lo:5",                  // ports are ignored for interfaces
      " lo",                   // no whitespace trimming
      sixteen + "lo",          // the 16th entry is still read
      sixteen + "nosuch16,lo", // the 17th is not
  };
  const fs::path conf = writeConf("");
  for (const auto& value : values) {
    const bool ours = !selectInterfaces(parseNcclSocketIfname(value), {"lo"}).empty();
    const NcclRun r = run(conf, {{"NCCL_DEBUG", "INFO"}, {"NCCL_SOCKET_IFNAME", value}}, {});
    SKIP_WITHOUT_NCCL(r);
    ASSERT_NE(r.log.find("NCCL_SOCKET_IFNAME set by environment to " + value + "\n"),
              std::string::npos)
        << r.log;
    const bool nccl = r.log.find("Bootstrap: Using lo:") != std::string::npos;
    EXPECT_EQ(ours, nccl) << "NCCL_SOCKET_IFNAME=\"" << value << "\"\n" << r.log;
  }
}

} // namespace
} // namespace kube_rdma
