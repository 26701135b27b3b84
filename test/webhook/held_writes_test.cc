// The held-writes BIO with real TLS 1.3 connections over socket pairs: what is written while
// held reaches the peer only at the release, everything else (handshake, writes outside a hold,
// close_notify) goes straight out, and a failed release is reported.
#include "webhook/held_writes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace kube_rdma {
namespace {

// A self-signed P-256 certificate, made in memory.
struct ServerContext {
  ServerContext() {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("held-writes"), -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    X509_set_pubkey(cert, key);
    X509_sign(cert, key, EVP_sha256());
    ctx = SSL_CTX_new(TLS_server_method());
    EXPECT_EQ(SSL_CTX_use_certificate(ctx, cert), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  ~ServerContext() { SSL_CTX_free(ctx); }

  SSL_CTX* ctx = nullptr;
};

// A server and a client TLS endpoint on the two ends of a socket pair; the server's socket is
// blocking after the handshake, as httplib leaves it.
class Connection {
public:
  explicit Connection(SSL_CTX* server_ctx) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    server_fd_ = fds[0];
    client_fd_ = fds[1];
    server = SSL_new(server_ctx);
    SSL_set_fd(server, server_fd_);
    client = SSL_new(client_ctx_);
    SSL_set_fd(client, client_fd_);
  }
  ~Connection() {
    SSL_free(server);
    SSL_free(client);
    SSL_CTX_free(client_ctx_);
    if (client_fd_ >= 0) {
      ::close(client_fd_);
    }
    ::close(server_fd_);
  }

  // Both sides step their handshake in turn on non-blocking sockets until both are done.
  bool handshake() {
    ::fcntl(server_fd_, F_SETFL, O_NONBLOCK);
    ::fcntl(client_fd_, F_SETFL, O_NONBLOCK);
    bool server_done = false;
    bool client_done = false;
    for (int round = 0; round < 100 && !(server_done && client_done); ++round) {
      client_done = client_done || SSL_connect(client) == 1;
      server_done = server_done || SSL_accept(server) == 1;
    }
    ::fcntl(server_fd_, F_SETFL, 0);
    return server_done && client_done;
  }

  // What the client can read now, without waiting: decrypted application data.
  std::string clientReads() {
    std::string out;
    char buffer[4096];
    for (int n; (n = SSL_read(client, buffer, sizeof(buffer))) > 0;) {
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }
  // Bytes waiting on the client's socket, undecrypted.
  bool clientSocketHasBytes() const {
    char byte;
    return ::recv(client_fd_, &byte, 1, MSG_DONTWAIT | MSG_PEEK) == 1;
  }
  void closeClient() {
    ::close(client_fd_);
    client_fd_ = -1;
  }
  int serverFd() const { return server_fd_; }

  SSL* server = nullptr;
  SSL* client = nullptr;

private:
  SSL_CTX* client_ctx_ = SSL_CTX_new(TLS_client_method());
  int server_fd_ = -1;
  int client_fd_ = -1;
};

class HeldWritesTest : public testing::Test {
protected:
  // A release to a closed peer writes to a socket nobody reads: EPIPE, not a signal (httplib's
  // server ignores SIGPIPE the same way).
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  void SetUp() override {
    ASSERT_TRUE(connection_.handshake());
    connection_.clientReads(); // TLS 1.3 session tickets
  }

  ServerContext context_;
  Connection connection_{context_.ctx};
};

TEST_F(HeldWritesTest, WhatIsWrittenWhileHeldReachesThePeerOnlyAtTheRelease) {
  ASSERT_TRUE(holdWrites(*connection_.server));
  ASSERT_EQ(SSL_write(connection_.server, "HTTP/1.1 200 OK\r\n\r\n", 19), 19);
  ASSERT_EQ(SSL_write(connection_.server, "{\"body\":1}", 10), 10);
  EXPECT_FALSE(connection_.clientSocketHasBytes());
  EXPECT_GT(heldBytesForTest(*connection_.server), 29u); // two records, with their overhead

  EXPECT_TRUE(releaseWrites(*connection_.server));
  EXPECT_EQ(heldBytesForTest(*connection_.server), 0u);
  EXPECT_EQ(connection_.clientReads(), "HTTP/1.1 200 OK\r\n\r\n{\"body\":1}");
}

TEST_F(HeldWritesTest, WritesOutsideAHoldGoStraightOut) {
  ASSERT_EQ(SSL_write(connection_.server, "before", 6), 6);
  EXPECT_EQ(connection_.clientReads(), "before");
  ASSERT_TRUE(holdWrites(*connection_.server));
  ASSERT_TRUE(releaseWrites(*connection_.server));
  ASSERT_EQ(SSL_write(connection_.server, "after", 5), 5);
  EXPECT_EQ(heldBytesForTest(*connection_.server), 0u);
  EXPECT_EQ(connection_.clientReads(), "after");
}

TEST_F(HeldWritesTest, EachAnswerOnAKeepAliveConnectionIsHeldAndReleasedOnItsOwn) {
  for (const std::string answer : {"first", "second", "third"}) {
    ASSERT_TRUE(holdWrites(*connection_.server));
    ASSERT_EQ(SSL_write(connection_.server, answer.data(), static_cast<int>(answer.size())),
              static_cast<int>(answer.size()));
    EXPECT_FALSE(connection_.clientSocketHasBytes()) << answer;
    ASSERT_TRUE(releaseWrites(*connection_.server));
    EXPECT_EQ(connection_.clientReads(), answer);
  }
  // One filter on the socket, however many answers: the socket BIO is right under it, and the
  // socket the watchdog and httplib look up is the same.
  BIO* filter = SSL_get_wbio(connection_.server);
  ASSERT_NE(BIO_next(filter), nullptr);
  EXPECT_EQ(BIO_next(BIO_next(filter)), nullptr);
  EXPECT_EQ(SSL_get_wfd(connection_.server), connection_.serverFd());
  EXPECT_EQ(SSL_get_fd(connection_.server), connection_.serverFd());
}

TEST_F(HeldWritesTest, CloseNotifyAfterAnAnswerIsNeverHeld) {
  ASSERT_TRUE(holdWrites(*connection_.server));
  ASSERT_EQ(SSL_write(connection_.server, "answer", 6), 6);
  ASSERT_TRUE(releaseWrites(*connection_.server));
  EXPECT_EQ(connection_.clientReads(), "answer");
  SSL_shutdown(connection_.server);
  char byte;
  EXPECT_EQ(SSL_read(connection_.client, &byte, 1), 0);
  EXPECT_EQ(SSL_get_error(connection_.client, 0), SSL_ERROR_ZERO_RETURN);
}

TEST_F(HeldWritesTest, AReleaseThatCannotWriteIsReported) {
  ASSERT_TRUE(holdWrites(*connection_.server));
  ASSERT_EQ(SSL_write(connection_.server, "lost", 4), 4);
  connection_.closeClient();
  EXPECT_FALSE(releaseWrites(*connection_.server));
  EXPECT_EQ(heldBytesForTest(*connection_.server), 0u);
}

TEST(HeldWritesHandshakeTest, NothingIsHeldDuringAHandshake) {
  ServerContext context;
  Connection connection(context.ctx);
  EXPECT_FALSE(holdWrites(*connection.server));
  EXPECT_TRUE(releaseWrites(*connection.server)); // nothing held: nothing to do
  EXPECT_TRUE(connection.handshake());
}

} // namespace
} // namespace kube_rdma
