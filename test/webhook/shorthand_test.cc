#include "webhook/shorthand.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

struct GoodCase {
  std::string description;
  std::string input;
  uint32_t count;
  std::string resource;
};

class ShorthandGood : public testing::TestWithParam<GoodCase> {};

TEST_P(ShorthandGood, ResolvesToCountAndResource) {
  const auto& c = GetParam();
  auto got = resolveShorthand(c.input, defaultShorthandMap());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->count, c.count);
  EXPECT_EQ(got->resource, c.resource);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, ShorthandGood,
    testing::Values(GoodCase{"plain", "1", 1, "rdma/hca"}, GoodCase{"ib", "2(ib)", 2, "rdma/hca"},
                    GoodCase{"roce", "1(roce)", 1, "rdma/shared"},
                    GoodCase{"full_width", "8\xEF\xBC\x88roce\xEF\xBC\x89", 8, "rdma/shared"},
                    GoodCase{"upper_case_type", "3(RoCE)", 3, "rdma/shared"},
                    GoodCase{"surrounding_space", " \t4(ib)\n", 4, "rdma/hca"},
                    GoodCase{"leading_zero", "01", 1, "rdma/hca"},
                    GoodCase{"largest", "1024", 1024, "rdma/hca"}),
    [](const auto& info) { return info.param.description; });

struct BadCase {
  std::string description;
  std::string input;
  std::string message_part; // the problem the message must name
};

class ShorthandBad : public testing::TestWithParam<BadCase> {};

TEST_P(ShorthandBad, IsAnErrorNamingTheProblem) {
  const auto& c = GetParam();
  auto got = resolveShorthand(c.input, defaultShorthandMap());
  ASSERT_FALSE(got.ok()) << "accepted \"" << c.input << "\" as " << got->count;
  EXPECT_NE(got.error().message.find(c.message_part), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("\"" + c.input + "\""), std::string::npos)
      << "message should quote the value: " << got.error().message;
}

INSTANTIATE_TEST_SUITE_P(Errors, ShorthandBad,
                         testing::Values(BadCase{"fraction", "1.5", "whole number"},
                                         BadCase{"negative", "-1", "at least 1"},
                                         BadCase{"zero", "0", "at least 1"},
                                         BadCase{"word", "x", "missing the count"},
                                         BadCase{"unknown_type", "1(foo)", "unknown type \"foo\""},
                                         BadCase{"too_large", "99999999999", "too large"},
                                         BadCase{"just_over", "1025", "too large"},
                                         BadCase{"empty", "", "empty"},
                                         BadCase{"only_space", "  ", "empty"},
                                         BadCase{"type_only", "(roce)", "missing the count"},
                                         BadCase{"unbalanced", "1(roce", "missing \")\""},
                                         BadCase{"empty_type", "1()", "missing the type"},
                                         BadCase{"trailing", "1(roce)x", "after \")\""},
                                         BadCase{"space_inside", "1 (roce)", "unexpected"},
                                         BadCase{"plus", "+1", "missing the count"}),
                         [](const auto& info) { return info.param.description; });

TEST(Shorthand, ParseKeepsTheLowerCasedTypeWithoutAMap) {
  auto got = parseShorthand("2(IB)");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->count, 2u);
  EXPECT_EQ(got->type, "ib");
  auto plain = parseShorthand("5");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->type, "");
}

TEST(Shorthand, UsesTheOperatorsMap) {
  ShorthandMap map{{{"roce", "example.com/roce"}, {"gpu-rail", "example.com/rail"}}, "x.io/y"};
  EXPECT_EQ(resolveShorthand("1(gpu-rail)", map)->resource, "example.com/rail");
  EXPECT_EQ(resolveShorthand("1", map)->resource, "x.io/y");
  auto ib = resolveShorthand("1(ib)", map);
  ASSERT_FALSE(ib.ok());
  EXPECT_NE(ib.error().message.find("known: \"gpu-rail\", \"roce\""), std::string::npos)
      << ib.error().message;
}

} // namespace
} // namespace kube_rdma
