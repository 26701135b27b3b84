#include "plugin/preferred_allocation.h"

#include <gtest/gtest.h>

#include <ostream>

namespace kube_rdma {
namespace {

// Eight HCAs as on the A100 node: two per PCIe switch, four switches, two per NUMA node...
// except that NUMA 1 has only three here (nic7 is on an unknown node), so packing is visible.
std::vector<PlacedDevice> node() {
  return {
      {"nic0", 0, {"0000:00:01.0", "0000:10:00.0", "0000:11:00.0"}},
      {"nic1", 0, {"0000:00:01.0", "0000:10:00.0", "0000:11:01.0"}},
      {"nic2", 0, {"0000:00:02.0", "0000:20:00.0", "0000:21:00.0"}},
      {"nic3", 0, {"0000:00:02.0", "0000:20:00.0", "0000:21:01.0"}},
      {"nic4", 1, {"0000:80:01.0", "0000:90:00.0", "0000:91:00.0"}},
      {"nic5", 1, {"0000:80:01.0", "0000:90:00.0", "0000:91:01.0"}},
      {"nic6", 1, {"0000:80:02.0", "0000:a0:00.0", "0000:a1:00.0"}},
      {"nic7", std::nullopt, {}},
  };
}

std::vector<std::string> all() {
  return {"nic0", "nic1", "nic2", "nic3", "nic4", "nic5", "nic6", "nic7"};
}

struct Case {
  std::string description;
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  int size;
  std::vector<std::string> expected;
};

// gtest prints the parameter in test listings: the description, not the bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.description;
}

class PreferredAllocationTest : public ::testing::TestWithParam<Case> {};

TEST_P(PreferredAllocationTest, Chooses) {
  const auto& c = GetParam();
  auto chosen = choosePreferredAllocation(node(), c.available, c.must_include, c.size);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  EXPECT_EQ(*chosen, c.expected) << c.description;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PreferredAllocationTest,
    ::testing::Values(
        Case{"two from the fullest NUMA node, on one switch", all(), {}, 2, {"nic0", "nic1"}},
        Case{"must_include pulls the choice onto its NUMA node and next to it on the switch",
             all(),
             {"nic5"},
             2,
             {"nic5", "nic4"}},
        Case{"must_include on NUMA 1, size 3: stays on NUMA 1",
             all(),
             {"nic6"},
             3,
             {"nic6", "nic4", "nic5"}},
        Case{"a node that cannot hold the request is topped up from the next",
             all(),
             {},
             5,
             {"nic0", "nic1", "nic2", "nic3", "nic4"}},
        Case{"NUMA node with more free devices wins over a lower-numbered one",
             {"nic0", "nic4", "nic5"},
             {},
             2,
             {"nic4", "nic5"}},
        Case{"unknown NUMA comes last", {"nic7", "nic6"}, {}, 1, {"nic6"}},
        Case{"zero devices", all(), {}, 0, {}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(PreferredAllocation, RefusesInconsistentRequestsWithTheIdsNamed) {
  auto unknown = choosePreferredAllocation(node(), {"nic0", "ghost"}, {}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("ghost"), std::string::npos);

  auto outside = choosePreferredAllocation(node(), {"nic0"}, {"nic1"}, 1);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("nic1"), std::string::npos);

  EXPECT_FALSE(choosePreferredAllocation(node(), {"nic0"}, {}, 2).ok());
  EXPECT_FALSE(choosePreferredAllocation(node(), {"nic0", "nic1"}, {"nic0", "nic1"}, 1).ok());
}

} // namespace
} // namespace kube_rdma
