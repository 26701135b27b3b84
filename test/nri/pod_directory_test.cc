#include "nri/pod_directory.h"

#include <gtest/gtest.h>

#include <string>

namespace kube_rdma {
namespace {

TEST(PodDirectory, KnowsEachPodsUidByNamespaceAndName) {
  PodDirectory pods;
  pods.remember("training", "worker-0", "uid-a");
  pods.remember("other", "worker-0", "uid-b");
  EXPECT_EQ(pods.uid("training", "worker-0"), "uid-a");
  EXPECT_EQ(pods.uid("other", "worker-0"), "uid-b");
  EXPECT_EQ(pods.uid("training", "worker-1"), "");
  pods.remember("training", "worker-0", "uid-c"); // deleted and created again
  EXPECT_EQ(pods.uid("training", "worker-0"), "uid-c");
  pods.remember("training", "worker-2", ""); // no UID: nothing to remember
  EXPECT_EQ(pods.uid("training", "worker-2"), "");
}

TEST(PodDirectory, ForgetsThePodRememberedLongestAgoPastItsCapacity) {
  PodDirectory pods;
  pods.remember("ns", "first", "uid-first");
  pods.remember("ns", "second", "uid-second");
  pods.remember("ns", "first", "uid-first-again"); // remembered anew: now the youngest
  for (size_t i = 0; i < PodDirectory::kCapacity - 2; ++i) {
    pods.remember("ns", "pod-" + std::to_string(i), "uid-" + std::to_string(i));
  }
  EXPECT_EQ(pods.uid("ns", "second"), "uid-second"); // exactly at capacity
  pods.remember("ns", "one-more", "uid-one-more");
  EXPECT_EQ(pods.uid("ns", "second"), "");
  EXPECT_EQ(pods.uid("ns", "first"), "uid-first-again");
  EXPECT_EQ(pods.uid("ns", "one-more"), "uid-one-more");
}

} // namespace
} // namespace kube_rdma
