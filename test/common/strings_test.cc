#include <gtest/gtest.h>

#include "common/strings.h"

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

} // namespace
} // namespace kube_rdma
