#pragma once

#include <openssl/ssl.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

// TLS on a connected TCP socket, OpenSSL reading and writing the socket itself; to Beast an
// AsyncReadStream and AsyncWriteStream. Asio's ssl::stream would keep four 17 KiB buffers per
// connection for its whole life (two of its own and a BIO pair's), ~68 KiB that a keep-alive
// connection waiting for the API server's next review never gives back. Here OpenSSL's own record
// buffers are all there is, and it releases them between records (SSL_MODE_RELEASE_BUFFERS).
namespace kube_rdma {

class TlsStream {
public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // `context` must outlive the stream.
  TlsStream(boost::asio::ip::tcp::socket socket, SSL_CTX& context);

  executor_type get_executor() { return socket_.get_executor(); }
  // For what is below TLS: cancelling the pending step, a half-close, reading what is left.
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // The server side of the handshake; the handler gets (error_code, 0).
  template <class Handler> auto async_handshake(Handler&& handler) {
    return run(Step::kHandshake, nullptr, 0, std::forward<Handler>(handler));
  }

  template <class MutableBuffers, class Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return read(buffers, false, std::forward<Handler>(handler));
  }

  // async_read_some for bytes not expected yet (a keep-alive connection's next request): waits
  // for the socket first instead of a read that would fail, one system call fewer.
  template <class MutableBuffers, class Handler>
  auto async_read_next(const MutableBuffers& buffers, Handler&& handler) {
    return read(buffers, true, std::forward<Handler>(handler));
  }

  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    // An HTTP answer comes as several buffers (start line, headers, body): gathered, they leave
    // as one record and one send instead of one each.
    const size_t total = boost::asio::buffer_size(buffers);
    if (total == 0) {
      return run(Step::kWrite, nullptr, 0, std::forward<Handler>(handler));
    }
    const boost::asio::const_buffer first(*boost::asio::buffer_sequence_begin(buffers));
    if (first.size() == total) {
      return run(Step::kWrite, const_cast<void*>(first.data()), first.size(),
                 std::forward<Handler>(handler));
    }
    gathered_.resize(std::min(total, kMaxGathered));
    boost::asio::buffer_copy(boost::asio::buffer(gathered_), buffers);
    return run(Step::kWrite, gathered_.data(), gathered_.size(), std::forward<Handler>(handler));
  }

private:
  enum class Step { kHandshake, kRead, kWrite };

  template <class MutableBuffers, class Handler>
  auto read(const MutableBuffers& buffers, bool wait_first, Handler&& handler) {
    // The first non-empty buffer: a TLS record is decrypted into one place.
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::mutable_buffer buffer(*it);
      if (buffer.size() > 0) {
        return run(Step::kRead, buffer.data(), buffer.size(), std::forward<Handler>(handler),
                   wait_first);
      }
    }
    return run(Step::kRead, nullptr, 0, std::forward<Handler>(handler));
  }
  static constexpr size_t kMaxGathered = size_t{16} * 1024;

  // One try of a step: finished (with its error and byte count), or the socket readiness that
  // OpenSSL needs before the next try.
  struct Attempt {
    bool finished = false;
    boost::system::error_code error;
    size_t bytes = 0;
    boost::asio::socket_base::wait_type wait = boost::asio::socket_base::wait_read;

    static Attempt done(boost::system::error_code error = {}, size_t bytes = 0) {
      return {true, error, bytes, boost::asio::socket_base::wait_read};
    }
    static Attempt waitFor(boost::asio::socket_base::wait_type wait) {
      return {false, {}, 0, wait};
    }
  };
  Attempt attempt(Step step, void* data, size_t size);
  // Whether OpenSSL holds received bytes not yet returned by a read.
  bool pending() const { return ssl_ && SSL_has_pending(ssl_.get()) == 1; }
  // After a write: a gathered answer's copy is not kept by an idle connection.
  void wrote();

  // Tries the step, waits for the socket as OpenSSL asks, tries again. A step finished on the
  // first try completes through the executor, never inside the call that started it.
  struct Operation {
    enum class State { kFirstTry, kWaited, kPosted };
    TlsStream& stream;
    Step step;
    void* data;
    size_t size;
    State state;
    bool wait_first;
    Attempt result;

    template <class Self> void operator()(Self& self, boost::system::error_code waited = {}) {
      if (state == State::kFirstTry && wait_first && !stream.pending()) {
        state = State::kWaited;
        stream.socket_.async_wait(boost::asio::socket_base::wait_read, std::move(self));
        return;
      }
      if (state != State::kPosted) {
        result = waited ? Attempt::done(waited) : stream.attempt(step, data, size);
        if (!result.finished) {
          state = State::kWaited;
          stream.socket_.async_wait(result.wait, std::move(self));
          return;
        }
        if (state == State::kFirstTry) {
          state = State::kPosted;
          boost::asio::post(stream.get_executor(), std::move(self));
          return;
        }
      }
      if (step == Step::kWrite) {
        stream.wrote();
      }
      self.complete(result.error, result.bytes);
    }
  };

  template <class Handler>
  auto run(Step step, void* data, size_t size, Handler&& handler, bool wait_first = false) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code, size_t)>(
        Operation{*this, step, data, size, Operation::State::kFirstTry, wait_first, Attempt{}},
        handler, socket_);
  }

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl_;
  std::string gathered_;
};

} // namespace kube_rdma
