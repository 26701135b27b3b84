#include "dra/flags.h"

#include <gtest/gtest.h>

#include "common/util/command_line.h"

namespace kube_rdma {
namespace {

// Every field as text, in declaration order, so that one comparison checks them all.
std::vector<std::string> fields(const DraFlags& f) {
  return {f.node_name,
          f.config_path,
          f.kubeconfig,
          f.sysfs_root,
          f.proc_root,
          f.dev_root,
          f.plugin_registry_dir,
          f.plugin_dir,
          f.cdi_dir,
          f.state_dir,
          f.metrics_address,
          f.pod_resources_socket,
          f.nri_socket,
          f.host_proc_root,
          formatDuration(f.health_timeout),
          f.nfd_features_file,
          formatDuration(f.nfd_features_ttl),
          f.share_ports ? "share" : "",
          f.log_format == LogFormat::kJson ? "json" : "text",
          f.exit_message};
}

TEST(DraFlags, DefaultsAreTheNodePathsAndTheNodeComesFromTheEnvironment) {
  auto flags = parseDraFlags({}, "gpu-node-1");
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(fields(*flags), (std::vector<std::string>{"gpu-node-1",
                                                      "",
                                                      "",
                                                      "/sys",
                                                      "/proc",
                                                      "/dev",
                                                      "/var/lib/kubelet/plugins_registry",
                                                      "/var/lib/kubelet/plugins/rdma.kube-rdma.io",
                                                      "/var/run/cdi",
                                                      "/var/run/kube-rdma/dra",
                                                      "",
                                                      "",
                                                      "",
                                                      "/proc",
                                                      "1m",
                                                      "",
                                                      "10m",
                                                      "",
                                                      "text",
                                                      ""}));
}

TEST(DraFlags, EveryFlagInBothSpellings) {
  auto flags = parseDraFlags({"--node-name",
                              "n2",
                              "--config=/etc/kube-rdma/config.json",
                              "--kubeconfig",
                              "/etc/kube/config",
                              "--sysfs-root",
                              "/host/sys",
                              "--proc-root=/host/proc",
                              "--dev-root",
                              "/host/dev",
                              "--plugin-registry-dir=/r",
                              "--plugin-dir",
                              "/p",
                              "--cdi-dir=/c",
                              "--state-dir",
                              "/s",
                              "--metrics-address=:9436",
                              "--pod-resources-socket",
                              "/pr.sock",
                              "--nri-socket=/nri.sock",
                              "--host-proc-root",
                              "/tmp",
                              "--health-timeout",
                              "90s",
                              "--nfd-features-file=/f",
                              "--nfd-features-ttl",
                              "1m30s",
                              "--share-ports",
                              "--log-format=json"},
                             "from-env");
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(fields(*flags), (std::vector<std::string>{"n2",
                                                      "/etc/kube-rdma/config.json",
                                                      "/etc/kube/config",
                                                      "/host/sys",
                                                      "/host/proc",
                                                      "/host/dev",
                                                      "/r",
                                                      "/p",
                                                      "/c",
                                                      "/s",
                                                      ":9436",
                                                      "/pr.sock",
                                                      "/nri.sock",
                                                      "/tmp",
                                                      "90s",
                                                      "/f",
                                                      "90s",
                                                      "share",
                                                      "json",
                                                      ""}));
}

TEST(DraFlags, ANodeNameIsRequired) {
  auto flags = parseDraFlags({"--cdi-dir", "/c"}, "");
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.error().message.find("--node-name (or NODE_NAME) is required"),
            std::string::npos);
  auto help = parseDraFlags({"--help"}, "");
  ASSERT_TRUE(help.ok()) << help.error().message;
  EXPECT_NE(help->exit_message.find("--plugin-registry-dir"), std::string::npos);
}

TEST(DraFlags, AHealthTimeoutOutOfRangeIsAnErrorNamingTheFlag) {
  auto flags = parseDraFlags({"--health-timeout", "10ms"}, "n");
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.error().message.find("--health-timeout"), std::string::npos);
}

TEST(DraFlags, AnUnknownFlagIsAnError) {
  auto flags = parseDraFlags({"--cdi", "/c"}, "n");
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.error().message.find("--cdi"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
