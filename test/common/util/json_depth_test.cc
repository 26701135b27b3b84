#include "common/util/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace kube_rdma {
namespace {

std::string nested(int levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

TEST(JsonNestsDeeperThan, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_FALSE(jsonNestsDeeperThan(nested(3), 3));
  EXPECT_TRUE(jsonNestsDeeperThan(nested(4), 3));
  EXPECT_TRUE(jsonNestsDeeperThan(R"({"a":{"b":{"c":{}}}})", 3));
  EXPECT_FALSE(jsonNestsDeeperThan(R"([[1],[2],[3],{"a":[]}])", 3)); // depth, not count
  EXPECT_FALSE(jsonNestsDeeperThan(R"({"a":"[[[[{{{{"})", 1));       // brackets in a string
  // Escaped quotes do not end a string; an escaped backslash before a quote does.
  EXPECT_FALSE(jsonNestsDeeperThan(R"({"a":"\"[[[[\""})", 1));
  EXPECT_TRUE(jsonNestsDeeperThan(R"({"a":"\\","b":[[[1]]]})", 3));
  EXPECT_FALSE(jsonNestsDeeperThan(R"({"a":"unterminated [[[[)", 1)); // left to the parser
}

} // namespace
} // namespace kube_rdma
