#include "kubeclient/bearer_token.h"

#include <gtest/gtest.h>

#include <memory>

#include "test/fakes/fake_clock.h"

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;

// A token file the kubelet rewrites; counts how often it is read.
struct RotatingFile {
  std::string content = "first\n";
  bool readable = true;
  int reads = 0;
  ReadFile reader() {
    return [this](const std::filesystem::path&) -> Result<std::string> {
      ++reads;
      if (!readable) {
        return makeError("cannot read token");
      }
      return content;
    };
  }
};

TEST(BearerTokenTest, AFixedTokenIsSentAsItIs) {
  BearerToken token("fixed", "", nullptr, std::make_shared<FakeClock>());
  EXPECT_EQ(*token.current(), "fixed");
  EXPECT_FALSE(token.fromFile());
}

// A token from a file, on a clock the test moves.
class TokenFileTest : public ::testing::Test {
protected:
  RotatingFile file_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  BearerToken token_{"ignored-when-a-file-is-given", "/token", file_.reader(), clock_};
};

TEST_F(TokenFileTest, TheFileIsReadAgainOnceAMinuteOld) {
  EXPECT_EQ(*token_.current(), "first");
  file_.content = "second";
  clock_->advance(59s);
  EXPECT_EQ(*token_.current(), "first");
  EXPECT_EQ(file_.reads, 1);
  clock_->advance(1s);
  EXPECT_EQ(*token_.current(), "second");
  EXPECT_EQ(file_.reads, 2);
}

TEST_F(TokenFileTest, ExpireMakesTheNextRequestReadTheFile) {
  EXPECT_EQ(*token_.current(), "first");
  file_.content = "second";
  token_.expire();
  EXPECT_EQ(*token_.current(), "second");
}

TEST_F(TokenFileTest, AFailedRereadKeepsTheLastGoodToken) {
  EXPECT_EQ(*token_.current(), "first");
  file_.readable = false;
  clock_->advance(2min);
  EXPECT_EQ(*token_.current(), "first");
  file_.content = "";
  file_.readable = true;
  clock_->advance(2min);
  EXPECT_EQ(*token_.current(), "first");
}

TEST(BearerTokenTest, AnUnreadableOrEmptyFileAtFirstIsAnError) {
  RotatingFile file;
  file.readable = false;
  BearerToken unreadable("", "/token", file.reader(), std::make_shared<FakeClock>());
  ASSERT_FALSE(unreadable.current());
  EXPECT_EQ(unreadable.current().error().message, "token file: cannot read token");
  file.readable = true;
  file.content = "\n";
  BearerToken empty("", "/token", file.reader(), std::make_shared<FakeClock>());
  ASSERT_FALSE(empty.current());
  EXPECT_EQ(empty.current().error().message, "token file: /token is empty");
}

} // namespace
} // namespace kube_rdma
