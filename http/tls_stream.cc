#include "http/tls_stream.h"

#include <openssl/err.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <cerrno>

namespace kube_rdma {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// What a connection keeps of a gathered answer between requests: about an ordinary answer.
constexpr size_t kKeptGatheredBytes = 4096;

} // namespace

TlsStream::TlsStream(asio::ip::tcp::socket socket, SSL_CTX& context)
    : socket_(std::move(socket)), ssl_(SSL_new(&context), SSL_free) {
  error_code ignored;
  socket_.non_blocking(true, ignored);
  if (ssl_) {
    SSL_set_fd(ssl_.get(), static_cast<int>(socket_.native_handle()));
    SSL_set_accept_state(ssl_.get());
  }
}

TlsStream::Attempt TlsStream::attempt(Step step, void* data, size_t size) {
  if (!ssl_) {
    return Attempt::done(asio::error::no_memory);
  }
  if (step != Step::kHandshake && size == 0) {
    return Attempt::done();
  }
  // OpenSSL's error queue is the thread's, shared by every connection of this loop.
  ERR_clear_error();
  errno = 0;
  size_t bytes = 0;
  int done = 0;
  switch (step) {
  case Step::kHandshake:
    done = SSL_do_handshake(ssl_.get());
    break;
  case Step::kRead:
    done = SSL_read_ex(ssl_.get(), data, size, &bytes);
    break;
  case Step::kWrite:
    done = SSL_write_ex(ssl_.get(), data, size, &bytes);
    break;
  }
  if (done == 1) {
    return Attempt::done({}, bytes);
  }
  const int error = SSL_get_error(ssl_.get(), done);
  switch (error) {
  case SSL_ERROR_WANT_READ:
    return Attempt::waitFor(asio::socket_base::wait_read);
  case SSL_ERROR_WANT_WRITE:
    return Attempt::waitFor(asio::socket_base::wait_write);
  case SSL_ERROR_ZERO_RETURN: // the peer's close_notify
    return Attempt::done(asio::error::eof);
  case SSL_ERROR_SYSCALL:
    return Attempt::done(errno != 0 ? error_code(errno, boost::system::system_category())
                                    : error_code(asio::ssl::error::stream_truncated));
  default:
    return Attempt::done(
        error_code(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category()));
  }
}

void TlsStream::wrote() {
  if (gathered_.capacity() > kKeptGatheredBytes) {
    std::string().swap(gathered_);
  }
}

} // namespace kube_rdma
