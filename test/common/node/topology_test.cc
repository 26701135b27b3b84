#include "common/node/topology.h"

#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

using Path = std::vector<std::string>;

TEST(Topology, ParsesADevicePathBelowSysDevices) {
  auto path = parsePciePath("pci0000:80/0000:80:02.0/0000:90:00.0/0000:91:01.0/0000:93:00.0");
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, (Path{"0000:80:02.0", "0000:90:00.0", "0000:91:01.0", "0000:93:00.0"}));
  EXPECT_EQ(rootComplexOf(*path), "pci0000:80");
  EXPECT_EQ(rootComplexOf({}), "");
}

TEST(Topology, RejectsPathsThatAreNotPci) {
  for (const char* bad :
       {"", "virtual/net/lo", "pci0000:00", "pci0000:00/0000:00:02", "pci0000:00/0000:00:02.0/net",
        "pciXXXX:00/0000:00:02.0", "0000:00:02.0/0000:10:00.0"}) {
    auto r = parsePciePath(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(Topology, ResolvesSysfsLinksWithOrWithoutAnOpenDirectory) {
  char buf[PATH_MAX];
  const std::string sys = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/sys";
  ASSERT_NE(::realpath(sys.c_str(), buf), nullptr);
  const std::string root(buf);
  const std::string link = root + "/class/infiniband/mlx5_1/device";
  auto by_path = resolvePciePath(root, link);
  ASSERT_TRUE(by_path.ok()) << by_path.error().message;
  const int fd = ::open(link.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto by_fd = resolvePciePath(root, link, fd);
  ::close(fd);
  ASSERT_TRUE(by_fd.ok()) << by_fd.error().message;
  EXPECT_EQ(*by_fd, *by_path);
  EXPECT_EQ(by_path->back(), "0000:13:00.0");

  auto outside = resolvePciePath(root, root + "/class/net/lo"); // a virtual device
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("virtual/net/lo"), std::string::npos)
      << outside.error().message;
  EXPECT_FALSE(resolvePciePath(root, root + "/class/infiniband/mlx5_99/device").ok());
}

// GPU and NIC under one switch (root port -> upstream -> two downstream ports): NCCL's PIX.
TEST(Topology, ClassifiesLikeNccl) {
  const Path gpu0{"0000:00:02.0", "0000:10:00.0", "0000:11:00.0", "0000:12:00.0"};
  const Path nic0{"0000:00:02.0", "0000:10:00.0", "0000:11:01.0", "0000:13:00.0"};
  const Path nic1{"0000:00:03.0", "0000:20:00.0", "0000:21:01.0", "0000:23:00.0"};
  const Path mgmt{"0000:00:01.0", "0000:0c:00.0"};
  const Path far{"0000:80:02.0", "0000:90:00.0", "0000:91:01.0", "0000:93:00.0"};
  // Two switch levels: upstream switch -> two lower switches.
  const Path deep_a{"0000:00:04.0", "0000:40:00.0", "0000:41:00.0",
                    "0000:42:00.0", "0000:43:00.0", "0000:44:00.0"};
  const Path deep_b{"0000:00:04.0", "0000:40:00.0", "0000:41:01.0",
                    "0000:45:00.0", "0000:46:00.0", "0000:47:00.0"};
  EXPECT_EQ(classifyPciPath(gpu0, 0, nic0, 0), PciPathType::kPix);
  EXPECT_EQ(classifyPciPath(deep_a, 0, deep_b, 0), PciPathType::kPxb);
  EXPECT_EQ(classifyPciPath(gpu0, 0, nic1, 0), PciPathType::kPhb);
  EXPECT_EQ(classifyPciPath(gpu0, 0, mgmt, 0), PciPathType::kPhb);
  EXPECT_EQ(classifyPciPath(gpu0, 0, far, 1), PciPathType::kSys);
  // Another root complex on the same NUMA node is still PHB (NCCL has no NODE level).
  EXPECT_EQ(classifyPciPath(gpu0, 1, far, 1), PciPathType::kPhb);
  EXPECT_EQ(classifyPciPath(gpu0, std::nullopt, far, std::nullopt), PciPathType::kSys);
  EXPECT_EQ(classifyPciPath({}, 0, nic0, 0), PciPathType::kSys);
  EXPECT_EQ(toString(PciPathType::kPix), "PIX");
  EXPECT_EQ(toString(PciPathType::kSys), "SYS");
}

TEST(Topology, EachA100GpuIsClosestToItsOwnNic) {
  const auto topo = discoverFromSysfs({std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/sys",
                                       std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/proc"});
  ASSERT_EQ(topo.gpus.size(), 8u);
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    EXPECT_EQ(closestHcas(topo.gpus[i], topo),
              std::vector<std::string>{"mlx5_" + std::to_string(i + 1)})
        << topo.gpus[i].pci_address;
  }
  const auto& gpu0 = topo.gpus.front();
  EXPECT_EQ(pathType(gpu0, *topo.findDevice("mlx5_0")), PciPathType::kPhb);
  EXPECT_EQ(pathType(gpu0, *topo.findDevice("mlx5_2")), PciPathType::kPhb);
  EXPECT_EQ(pathType(gpu0, *topo.findDevice("mlx5_8")), PciPathType::kSys);
}

} // namespace
} // namespace kube_rdma
