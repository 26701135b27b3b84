// Runs the rdmactl binary over the fixtures, as an operator would.
#include <cstdio>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace kube_rdma {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command and returns its exit code and standard output.
RunResult runCommand(const std::string& cmd) {
  RunResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    r.out.append(buf, n);
  }
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `env_prefix` is prepended to the command (e.g. "NCCL_IB_HCA=mlx5_1"); the environment is
// otherwise emptied so the host's NCCL_* variables cannot leak in. stderr is dropped.
RunResult rdmactl(const std::string& fixture, const std::string& args,
                  const std::string& env_prefix = "") {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + fixture;
  const std::string cmd = "env -i PATH=/usr/bin:/bin " + env_prefix + " " + RDMACTL_BINARY +
                          " --sysfs-root " + base + "/sys --proc-root " + base +
                          "/proc --dev-root " + base + "/dev " + args + " 2>/dev/null";
  return runCommand(cmd);
}

TEST(RdmactlBinary, HelpNeedsNoSysfs) {
  const auto r = runCommand(std::string(RDMACTL_BINARY) +
                            " --sysfs-root /nonexistent-kube-rdma-root help 2>&1");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Usage: rdmactl"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

TEST(RdmactlBinary, GidsOnTheA100Node) {
  const auto r = rdmactl("a100-roce", "gids");
  ASSERT_EQ(r.exit_code, 0);
  for (int d = 0; d <= 8; ++d) {
    const std::string dev = "mlx5_" + std::to_string(d) + "\t1\t";
    EXPECT_NE(r.out.find(dev + "2\t"), std::string::npos) << dev;
    EXPECT_NE(r.out.find(dev + "3\t"), std::string::npos) << dev;
  }
  EXPECT_NE(r.out.find("\t25.11.128.226\tv2\teth8\tthis\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\t10.0.60.3\tv1\teth0\tthis\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("n_gids_found=36\n"), std::string::npos);
}

TEST(RdmactlBinary, GidsJson) {
  const auto r = rdmactl("a100-roce", "--json gids mlx5_1");
  ASSERT_EQ(r.exit_code, 0);
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2]["ipv4"], "25.11.128.2");
  EXPECT_EQ(rows[2]["version"], "v1");
  EXPECT_EQ(rows[3]["version"], "v2");
}

TEST(RdmactlBinary, NcclEnvOnTheA100Node) {
  const auto r = rdmactl("a100-roce", "nccl-env");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("NCCL_IB_HCA==mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,"
                        "mlx5_7:1,mlx5_8:1\n",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(r.out.find("mlx5_0"), std::string::npos);
  const auto json = nlohmann::json::parse(rdmactl("a100-roce", "nccl-env --json").out);
  EXPECT_EQ(json["pool"], "rdma/shared");
  EXPECT_EQ(rdmactl("a100-roce", "nccl-env --pool rdma/nope").exit_code, 2);
}

TEST(RdmactlBinary, Devices) {
  const auto r = rdmactl("ib-hdr8", "devices");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("mlx5_3 port 1 ==> ib3 (Up)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("InfiniBand 200 Gb/sec (4X HDR)"), std::string::npos);
  const auto json = nlohmann::json::parse(rdmactl("ib-hdr8", "--json devices").out);
  EXPECT_EQ(json["devices"].size(), 8u);
  EXPECT_EQ(json["devices"][0]["ports"][0]["netdev_state"], "Up");
}

TEST(RdmactlBinary, DoctorExitsNonZeroOnAFailedCheck) {
  const auto down = rdmactl("port-down", "doctor");
  EXPECT_EQ(down.exit_code, 1) << down.out;
  EXPECT_NE(down.out.find("FAIL ports-active"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("mlx5_3 port 1 is DOWN/Disabled"), std::string::npos);

  const auto over = rdmactl("mlx5-1-10", "doctor --json", "NCCL_IB_HCA=mlx5_1");
  const auto json = nlohmann::json::parse(over.out);
  bool found = false;
  for (const auto& c : json["checks"]) {
    if (c["name"] == "nccl-ib-hca") {
      found = true;
      EXPECT_EQ(c["verdict"], "warn");
    }
    if (c["name"] == "ports-active" || c["name"] == "uverbs-nodes" || c["name"] == "roce-gids") {
      EXPECT_EQ(c["verdict"], "ok") << c.dump();
    }
  }
  EXPECT_TRUE(found) << over.out;

  const auto disabled = rdmactl("a100-roce", "doctor", "NCCL_IB_DISABLE=1");
  EXPECT_EQ(disabled.exit_code, 1);
  EXPECT_NE(disabled.out.find("FAIL nccl-ib-disable"), std::string::npos) << disabled.out;
}

// The node checks: every name rdmactl doctor adds after the device checks, up to memlock.
std::vector<nlohmann::json> nodeChecks(const nlohmann::json& report) {
  std::vector<nlohmann::json> out;
  bool in = false;
  for (const auto& c : report["checks"]) {
    in = in || c["name"] == "pcie-link";
    if (c["name"] == "memlock") {
      break;
    }
    if (in) {
      out.push_back(c);
    }
  }
  return out;
}

TEST(RdmactlBinary, DoctorNodeChecksAreQuietOnTheHealthyA100Node) {
  const auto r =
      rdmactl("a100-roce", "--json doctor", "KUBERNETES_SERVICE_HOST=10.96.0.1 KUBE_RDMA_CDI=1");
  const auto report = nlohmann::json::parse(r.out);
  const auto checks = nodeChecks(report);
  // 9 checks, two pools, versions, and in a pod cdi and workload-memlock.
  ASSERT_EQ(checks.size(), 14u) << r.out;
  for (const auto& c : checks) {
    EXPECT_EQ(c["verdict"], "ok") << c.dump();
  }
  EXPECT_EQ(checks.back()["name"], "workload-memlock") << r.out;
}

TEST(RdmactlBinary, DoctorOnTheDegradedNodeFailsWithEvidenceInTextAndJson) {
  const auto text = rdmactl("a100-degraded", "doctor");
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("FAIL pcie-link"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("read: " + std::string(KUBE_RDMA_FIXTURES) +
                          "/a100-degraded/sys/bus/pci/devices/0000:23:00.0/current_link_width "
                          "= 8\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("warn pcie-acs"), std::string::npos) << text.out;

  const auto r = rdmactl("a100-degraded", "--json doctor");
  EXPECT_EQ(r.exit_code, 1);
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["ok"], false);
  std::map<std::string, std::string> verdicts;
  size_t counted = 0;
  for (const auto& c : report["checks"]) {
    verdicts[c["name"]] = c["verdict"];
    ASSERT_TRUE(c["evidence"].is_array()) << c.dump();
    for (const auto& e : c["evidence"]) {
      EXPECT_TRUE(e["path"].is_string() && e["value"].is_string()) << e.dump();
    }
    ++counted;
  }
  size_t summed = 0;
  for (const auto& [verdict, n] : report["summary"].items()) {
    summed += n.get<size_t>();
  }
  EXPECT_EQ(summed, counted);
  const std::map<std::string, std::string> want = {
      {"pcie-link", "fail"},    {"pcie-acs", "warn"},   {"gpudirect-rdma", "warn"},
      {"iommu", "warn"},        {"roce-mtu", "warn"},   {"roce-ecn", "warn"},
      {"hca-firmware", "warn"}, {"pool-rates", "warn"}, {"pool:rdma/shared", "warn"},
      {"pool:rdma/hca", "ok"},  {"versions", "ok"}};
  for (const auto& [name, verdict] : want) {
    EXPECT_EQ(verdicts[name], verdict) << name;
  }
}

TEST(RdmactlBinary, DoctorShowsOfedInfoWhenTheProgramIsThere) {
  char dir[] = "/tmp/rdmactl-ofed-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/ofed_info";
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("#!/bin/sh\n[ \"$1\" = -s ] && echo MLNX_OFED_LINUX-23.10-0.5.5.0:\n", f);
  std::fclose(f);
  ::chmod(script.c_str(), 0755);
  const auto r =
      rdmactl("a100-roce", "--json doctor", "PATH=" + std::string(dir) + ":/usr/bin:/bin");
  std::string versions;
  const auto report = nlohmann::json::parse(r.out);
  for (const auto& c : report["checks"]) {
    if (c["name"] == "versions") {
      versions = c["detail"];
    }
  }
  EXPECT_NE(versions.find("ofed_info -s MLNX_OFED_LINUX-23.10-0.5.5.0:"), std::string::npos)
      << versions;
  std::remove(script.c_str());
  ::rmdir(dir);
  const auto without = rdmactl("a100-roce", "--json doctor");
  EXPECT_NE(without.out.find("ofed_info -s not available"), std::string::npos);
}

TEST(RdmactlBinary, UsageErrorsExitTwo) {
  EXPECT_EQ(rdmactl("a100-roce", "frobnicate").exit_code, 2);
  EXPECT_EQ(rdmactl("a100-roce", "gids mlx5_42").exit_code, 2);
  EXPECT_EQ(rdmactl("a100-roce", "--help").exit_code, 0);
}

} // namespace
} // namespace kube_rdma
