#include <cstdint>

#include <gtest/gtest.h>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

TEST(JoinStrings, NoItemsIsEmpty) {
  EXPECT_EQ(joinStrings({}, ","), "");
}

TEST(JoinStrings, OneItemHasNoSeparator) {
  EXPECT_EQ(joinStrings({"mlx5_0"}, ", "), "mlx5_0");
}

TEST(JoinStrings, SeparatorOnlyBetweenItems) {
  EXPECT_EQ(joinStrings({"mlx5_0", "mlx5_1", "mlx5_2"}, ","), "mlx5_0,mlx5_1,mlx5_2");
  EXPECT_EQ(joinStrings({"1", "2"}, ", "), "1, 2");
}

TEST(JoinStrings, EmptyItemsKeepTheirPlace) {
  EXPECT_EQ(joinStrings({"", "a", ""}, ","), ",a,");
}

TEST(ParseWhole, AcceptsOnlyAWholeNumber) {
  EXPECT_EQ(parseWhole<uint32_t>("42"), 42u);
  EXPECT_EQ(parseWhole<uint32_t>("1a", 16), 26u);
  EXPECT_EQ(parseWhole<int>("-1"), -1);
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x1a", "-1"}) {
    EXPECT_FALSE(parseWhole<uint32_t>(bad)) << bad;
  }
  EXPECT_FALSE(parseWhole<uint32_t>("4294967296")); // out of range
}

} // namespace
} // namespace kube_rdma
