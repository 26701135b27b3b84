#include "plugin/flags.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(PluginFlags, DefaultsAreTheNodePaths) {
  auto flags = parsePluginFlags({});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->config_path, "");
  EXPECT_EQ(flags->sysfs_root, "/sys");
  EXPECT_EQ(flags->proc_root, "/proc");
  EXPECT_EQ(flags->dev_root, "/dev");
  EXPECT_EQ(flags->device_plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(flags->plugin_registry_dir, "/var/lib/kubelet/plugins_registry");
  EXPECT_EQ(flags->state_dir, "/var/run/kube-rdma");
  EXPECT_EQ(flags->metrics_address, "");
  EXPECT_EQ(flags->node_name, "");
  EXPECT_EQ(flags->log_format, LogFormat::kText);
  EXPECT_FALSE(flags->resend_interval);
  EXPECT_FALSE(flags->health_interval);
  EXPECT_FALSE(flags->cdi);
  EXPECT_EQ(flags->cdi_dir, "/var/run/cdi");
  EXPECT_EQ(flags->exit_message, "");
}

// The DaemonSet's arguments (manifests/base/device-plugin/daemonset.yaml) and every other flag,
// in both spellings.
TEST(PluginFlags, ReadsEveryFlagInBothForms) {
  auto flags = parsePluginFlags({"--config=/etc/kube-rdma/plugin/config.json",
                                 "--sysfs-root=/host/sys",
                                 "--proc-root",
                                 "/x/proc",
                                 "--dev-root",
                                 "/host/dev",
                                 "--device-plugin-dir=/dp",
                                 "--plugin-registry-dir",
                                 "/reg",
                                 "--state-dir=/state",
                                 "--metrics-address=10.0.0.1:9400",
                                 "--node-name",
                                 "node-1",
                                 "--log-format=json",
                                 "--resend-interval",
                                 "2m",
                                 "--health-interval=250ms",
                                 "--cdi",
                                 "--cdi-dir",
                                 "/cdi"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->config_path, "/etc/kube-rdma/plugin/config.json");
  EXPECT_EQ(flags->sysfs_root, "/host/sys");
  EXPECT_EQ(flags->proc_root, "/x/proc");
  EXPECT_EQ(flags->dev_root, "/host/dev");
  EXPECT_EQ(flags->device_plugin_dir, "/dp");
  EXPECT_EQ(flags->plugin_registry_dir, "/reg");
  EXPECT_EQ(flags->state_dir, "/state");
  EXPECT_EQ(flags->metrics_address, "10.0.0.1:9400");
  EXPECT_EQ(flags->node_name, "node-1");
  EXPECT_EQ(flags->log_format, LogFormat::kJson);
  EXPECT_EQ(*flags->resend_interval, std::chrono::minutes(2));
  EXPECT_EQ(*flags->health_interval, std::chrono::milliseconds(250));
  EXPECT_TRUE(flags->cdi);
  EXPECT_EQ(flags->cdi_dir, "/cdi");
}

TEST(PluginFlags, BareDurationsAreSecondsAndSwitchesTakeTrueOrFalse) {
  auto flags = parsePluginFlags({"--resend-interval=30", "--health-interval", "1", "--cdi=false"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(*flags->resend_interval, std::chrono::seconds(30));
  EXPECT_EQ(*flags->health_interval, std::chrono::seconds(1));
  EXPECT_FALSE(flags->cdi);
}

TEST(PluginFlags, HelpAndVersionAnswerInsteadOfRunning) {
  auto help = parsePluginFlags({"--sysfs-root=/x", "--help"});
  ASSERT_TRUE(help.ok()) << help.error().message;
  EXPECT_NE(help->exit_message.find("Usage: rdma-device-plugin"), std::string::npos);
  EXPECT_NE(help->exit_message.find("--health-interval DURATION"), std::string::npos)
      << help->exit_message;
  auto version = parsePluginFlags({"--version"});
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_EQ(version->exit_message.rfind("rdma-device-plugin ", 0), 0u) << version->exit_message;
}

TEST(PluginFlags, ErrorsNameTheFlagAndTheValue) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  for (const auto& c : std::vector<Case>{
           {{"--bogus"}, "unexpected argument: --bogus"},
           {{"--config"}, "--config: 1 required FILE missing"},
           {{"--resend-interval", "soon"},
            "--resend-interval: 'soon' is not a duration (examples: 500ms, 5s, 1m30s)"},
           {{"--resend-interval", "0s"}, "--resend-interval: '0s' is outside 1ms..24h"},
           {{"--health-interval", "5d"}, "--health-interval: '5d' is not a duration"},
           {{"--log-format", "xml"}, "--log-format: must be text or json, not 'xml'"},
           {{"--cdi=maybe"}, "--cdi"},
           {{"stray"}, "unexpected argument: stray"}}) {
    auto flags = parsePluginFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.expected;
    EXPECT_EQ(flags.error().message.rfind(c.expected, 0), 0u) << flags.error().message;
  }
}

} // namespace
} // namespace kube_rdma
