#include "plugin/flags.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

// Every field as text, in declaration order, so that one comparison checks them all.
std::vector<std::string> fields(const PluginFlags& f) {
  auto duration = [](const std::optional<std::chrono::milliseconds>& d) {
    return d ? std::to_string(d->count()) + "ms" : "unset";
  };
  return {f.config_path,
          f.sysfs_root,
          f.proc_root,
          f.dev_root,
          toString(f.discovery),
          f.device_plugin_dir,
          f.plugin_registry_dir,
          f.state_dir,
          f.metrics_address,
          f.pod_resources_socket,
          f.nri_socket,
          f.host_proc_root,
          f.node_name,
          f.log_format == LogFormat::kJson ? "json" : "text",
          duration(f.resend_interval),
          duration(f.health_interval),
          f.cdi ? "cdi" : "no cdi",
          f.cdi_dir,
          f.nfd_features_file,
          std::to_string(f.nfd_features_ttl.count()) + "s",
          f.exit_message};
}

TEST(PluginFlags, DefaultsAreTheNodePaths) {
  auto flags = parsePluginFlags({});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(fields(*flags), (std::vector<std::string>{"",
                                                      "/sys",
                                                      "/proc",
                                                      "/dev",
                                                      "auto",
                                                      "/var/lib/kubelet/device-plugins",
                                                      "/var/lib/kubelet/plugins_registry",
                                                      "/var/run/kube-rdma",
                                                      "",
                                                      "",
                                                      "",
                                                      "/proc",
                                                      "",
                                                      "text",
                                                      "unset",
                                                      "unset",
                                                      "no cdi",
                                                      "/var/run/cdi",
                                                      "",
                                                      "600s",
                                                      ""}));
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
                                 "--discovery=sysfs",
                                 "--device-plugin-dir=/dp",
                                 "--plugin-registry-dir",
                                 "/reg",
                                 "--state-dir=/state",
                                 "--metrics-address=10.0.0.1:9400",
                                 "--pod-resources-socket=/pr.sock",
                                 "--nri-socket",
                                 "/nri.sock",
                                 "--host-proc-root=/tmp",
                                 "--node-name",
                                 "node-1",
                                 "--log-format=json",
                                 "--resend-interval",
                                 "2m",
                                 "--health-interval=250ms",
                                 "--cdi",
                                 "--cdi-dir",
                                 "/cdi",
                                 "--nfd-features-file=/nfd/features.d/kube-rdma",
                                 "--nfd-features-ttl",
                                 "90s"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(fields(*flags), (std::vector<std::string>{"/etc/kube-rdma/plugin/config.json",
                                                      "/host/sys",
                                                      "/x/proc",
                                                      "/host/dev",
                                                      "sysfs",
                                                      "/dp",
                                                      "/reg",
                                                      "/state",
                                                      "10.0.0.1:9400",
                                                      "/pr.sock",
                                                      "/nri.sock",
                                                      "/tmp",
                                                      "node-1",
                                                      "json",
                                                      "120000ms",
                                                      "250ms",
                                                      "cdi",
                                                      "/cdi",
                                                      "/nfd/features.d/kube-rdma",
                                                      "90s",
                                                      ""}));
}

TEST(PluginFlags, BareDurationsAreSecondsAndSwitchesTakeTrueOrFalse) {
  auto flags = parsePluginFlags({"--resend-interval=30", "--health-interval", "1", "--cdi=false"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(*flags->resend_interval, std::chrono::seconds(30));
  EXPECT_EQ(*flags->health_interval, std::chrono::seconds(1));
  EXPECT_FALSE(flags->cdi);
}

// The expiry-time is written to the second, and half the TTL must be at least a second.
TEST(PluginFlags, TheNfdTtlIsWholeSecondsOfAtLeastTwo) {
  for (const char* bad : {"1500ms", "1s", "0"}) {
    auto flags = parsePluginFlags({"--nfd-features-ttl", bad});
    ASSERT_FALSE(flags.ok()) << bad;
    EXPECT_NE(flags.error().message.find("--nfd-features-ttl"), std::string::npos)
        << flags.error().message;
  }
  auto flags = parsePluginFlags({"--nfd-features-ttl=2s"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->nfd_features_ttl, std::chrono::seconds(2));
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
           {{"--discovery", "rdma-core"},
            "--discovery: 'rdma-core' is not one of sysfs, verbs, auto"},
           {{"--cdi=maybe"}, "Could not convert: --cdi = maybe"},
           {{"--host-proc-root=/no/such/proc"},
            "--host-proc-root: Directory does not exist: /no/such/proc"},
           {{"stray"}, "unexpected argument: stray"}}) {
    auto flags = parsePluginFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.expected;
    EXPECT_EQ(flags.error().message.rfind(c.expected, 0), 0u) << flags.error().message;
  }
}

} // namespace
} // namespace kube_rdma
