#include "plugin/flags.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(PluginFlags, DefaultsAreTheNodePaths) {
  auto flags = parsePluginFlags({});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->sysfs_root, "/sys");
  EXPECT_EQ(flags->device_plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(flags->plugin_registry_dir, "/var/lib/kubelet/plugins_registry");
  EXPECT_EQ(flags->state_dir, "/var/run/kube-rdma");
  EXPECT_FALSE(flags->resend_interval);
  EXPECT_FALSE(flags->cdi);
}

TEST(PluginFlags, BothSpellingsDurationsAndSwitches) {
  auto flags = parsePluginFlags({"--sysfs-root=/x/sys", "--dev-root", "/x/dev", "--resend-interval",
                                 "2m", "--health-interval=250ms", "--cdi", "--log-format", "json"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->sysfs_root, "/x/sys");
  EXPECT_EQ(flags->dev_root, "/x/dev");
  EXPECT_EQ(*flags->resend_interval, std::chrono::minutes(2));
  EXPECT_EQ(*flags->health_interval, std::chrono::milliseconds(250));
  EXPECT_TRUE(flags->cdi);
  EXPECT_EQ(flags->log_format, LogFormat::kJson);
}

TEST(PluginFlags, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  for (const auto& c : std::vector<Case>{
           {{"--bogus"}, "unknown flag --bogus"},
           {{"--config"}, "--config needs a value"},
           {{"--resend-interval", "soon"}, "--resend-interval: 'soon' is not a duration"},
           {{"--resend-interval", "0s"}, "--resend-interval: must be more than zero"},
           {{"--health-interval", "5h"}, "unknown unit 'h'"},
           {{"--log-format", "xml"}, "--log-format: must be text or json"},
           {{"--cdi=maybe"}, "--cdi takes no value or true/false"},
           {{"stray"}, "unexpected argument 'stray'"}}) {
    auto flags = parsePluginFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.expected;
    EXPECT_NE(flags.error().message.find(c.expected), std::string::npos) << flags.error().message;
  }
}

} // namespace
} // namespace kube_rdma
