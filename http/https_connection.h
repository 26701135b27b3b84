#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "http/https_server.h"
#include "http/tls_stream.h"

// One accepted TLS connection, from handshake to close: reads requests one at a time, has the
// handler answer each and writes the answer, under the deadlines of ServerOptions. All its steps
// run on the one thread of its server loop, but the handler of a request ServerOptions::may_block
// picks, which runs on the blocking pool.
namespace kube_rdma {

class HttpsConnection : public std::enable_shared_from_this<HttpsConnection> {
public:
  // `blocking`: where the requests options.may_block picks are answered (null: inline).
  HttpsConnection(boost::asio::ip::tcp::socket socket, SSL_CTX& tls, const ServerOptions& options,
                  const RequestHandler& handler, ConnectionRegistry& registry,
                  boost::asio::thread_pool* blocking);
  ~HttpsConnection();
  HttpsConnection(const HttpsConnection&) = delete;
  HttpsConnection& operator=(const HttpsConnection&) = delete;

  // Starts the handshake; the connection keeps itself alive until it closes.
  void start();
  // Closes the connection if it has no request under way (handshaking or waiting for one);
  // otherwise the answer in flight is its last. Safe from any thread.
  void stop();

private:
  using Clock = std::chrono::steady_clock;

  void handshake();
  void onHandshake(const boost::system::error_code& error, size_t bytes);
  void waitForRequest();
  void onFirstBytes(const boost::system::error_code& error, size_t bytes);
  void readHeader();
  void onHeader(const boost::system::error_code& error, size_t bytes);
  void onContinueSent(const boost::system::error_code& error, size_t bytes);
  void readBody();
  void onBody(const boost::system::error_code& error, size_t bytes);
  // Sends the handler's answer to `request` (on the loop's thread, wherever it was computed).
  void respond(const HttpRequest& request, HttpResponse response);
  void answer(HttpResponse response, bool keep_alive);
  void onAnswered(const boost::system::error_code& error, size_t bytes);
  // Answers `status` with `message` and closes: the request's body, if any, is never read.
  void refuse(boost::beast::http::status status, const std::string& message);
  void closeLingering();
  void discard();
  // A timeout while a request (or the handshake) is under way is a cut; others just close.
  void countCut();
  // The step under way when `deadline` passes is cancelled and ends with an error.
  void expireAt(Clock::time_point deadline);
  void armTimer();

  TlsStream stream_;
  boost::asio::steady_timer deadline_;
  Clock::time_point current_deadline_;
  bool timed_out_ = false;
  const ServerOptions& options_;
  const RequestHandler& handler_;
  ConnectionRegistry& registry_;
  boost::asio::thread_pool* blocking_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  HttpResponse response_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::string_body>>
      serializer_;
  bool keep_alive_ = false;
  // Set only on its loop; stop() posts to it. Waiting: handshaking or waiting for a request.
  bool waiting_ = false;
  bool stopped_ = false;
  Clock::time_point request_deadline_;
  // Closing: a half-closed socket's incoming bytes are read into this and dropped.
  std::unique_ptr<char[]> discard_;
};

} // namespace kube_rdma
