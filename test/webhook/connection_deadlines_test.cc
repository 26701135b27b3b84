#include "webhook/connection_deadlines.h"

#include <gtest/gtest.h>

#include <vector>

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;
using TimePoint = ConnectionDeadlines::TimePoint;

// Distinct identities, as SSL* would be.
const int kFirst = 0;
const int kSecond = 1;

class ConnectionDeadlinesTest : public testing::Test {
protected:
  std::vector<int> cutAt(TimePoint now) {
    std::vector<int> fds;
    deadlines_.cutExpired(now, [&](int fd) { fds.push_back(fd); });
    return fds;
  }

  const TimePoint t0_{};
  ConnectionDeadlines deadlines_{10s};
};

TEST_F(ConnectionDeadlinesTest, AConnectionIsCutOnceItsLimitHasPassed) {
  deadlines_.opened(&kFirst, 7, t0_);
  EXPECT_TRUE(cutAt(t0_ + 10s).empty()) << "at the limit, not past it";
  EXPECT_EQ(cutAt(t0_ + 10s + 1ms), std::vector<int>{7});
  EXPECT_TRUE(cutAt(t0_ + 20s).empty()) << "cut once only";
  EXPECT_EQ(deadlines_.tracked(), 1u) << "tracked until its SSL is freed";
}

TEST_F(ConnectionDeadlinesTest, AnAnsweredRequestStartsTheTimeAgain) {
  deadlines_.opened(&kFirst, 7, t0_);
  deadlines_.answered(&kFirst, t0_ + 8s);
  EXPECT_TRUE(cutAt(t0_ + 15s).empty());
  EXPECT_EQ(cutAt(t0_ + 18s + 1ms), std::vector<int>{7});
}

TEST_F(ConnectionDeadlinesTest, OnlyTheSlowConnectionIsCut) {
  deadlines_.opened(&kFirst, 7, t0_);
  deadlines_.opened(&kSecond, 8, t0_ + 5s);
  EXPECT_EQ(cutAt(t0_ + 12s), std::vector<int>{7});
  EXPECT_EQ(cutAt(t0_ + 16s), std::vector<int>{8});
}

TEST_F(ConnectionDeadlinesTest, AClosedConnectionIsNeverCutEvenIfItsSocketNumberComesBack) {
  deadlines_.opened(&kFirst, 7, t0_);
  deadlines_.closed(&kFirst);
  EXPECT_EQ(deadlines_.tracked(), 0u);
  EXPECT_TRUE(cutAt(t0_ + 60s).empty());
  // Socket 7 reused by a new connection: its own time counts.
  deadlines_.opened(&kSecond, 7, t0_ + 55s);
  EXPECT_TRUE(cutAt(t0_ + 60s).empty());
}

TEST_F(ConnectionDeadlinesTest, ASecondHandshakeStartKeepsTheFirstTime) {
  // TLS 1.3 post-handshake messages report a handshake start again.
  deadlines_.opened(&kFirst, 7, t0_);
  deadlines_.opened(&kFirst, 7, t0_ + 9s);
  EXPECT_EQ(cutAt(t0_ + 11s), std::vector<int>{7});
}

TEST_F(ConnectionDeadlinesTest, AnswersAndClosesOfUnknownConnectionsAreIgnored) {
  deadlines_.answered(&kFirst, t0_);
  deadlines_.closed(&kSecond);
  EXPECT_EQ(deadlines_.tracked(), 0u);
  EXPECT_TRUE(cutAt(t0_ + 60s).empty());
}

} // namespace
} // namespace kube_rdma
