#include "http/https_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace kube_rdma {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

constexpr size_t kReadBytes = 4096;
// A buffer grown past this by a large body is given back after the answer: held connections
// keep only what an ordinary request needs.
constexpr size_t kKeptBufferBytes = size_t{16} * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// What the client wrote is not HTTP/1.1; the client closing or the deadline is not that.
bool isMalformed(const error_code& error) {
  return error.category() == error_code(http::error::bad_method).category() &&
         error != http::error::end_of_stream && error != http::error::partial_message;
}

bool hasBody(http::verb method) {
  return method == http::verb::post || method == http::verb::put || method == http::verb::patch;
}

} // namespace

HttpsConnection::HttpsConnection(asio::ip::tcp::socket socket, SSL_CTX& tls,
                                 const ServerOptions& options, const RequestHandler& handler,
                                 ConnectionRegistry& registry, asio::thread_pool* blocking)
    : stream_(std::move(socket), tls), deadline_(stream_.get_executor()), options_(options),
      handler_(handler), registry_(registry), blocking_(blocking) {}

HttpsConnection::~HttpsConnection() {
  registry_.remove(this);
}

void HttpsConnection::start() {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->handshake(); });
}

void HttpsConnection::stop() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    self->stopped_ = true;
    if (self->waiting_) {
      error_code ignored;
      self->stream_.socket().cancel(ignored);
    }
  });
}

void HttpsConnection::handshake() {
  const Clock::time_point now = Clock::now();
  request_deadline_ = now + options_.keep_alive_timeout + options_.request_timeout;
  expireAt(std::min(now + options_.handshake_timeout, request_deadline_));
  waiting_ = true;
  stream_.async_handshake(
      beast::bind_front_handler(&HttpsConnection::onHandshake, shared_from_this()));
}

void HttpsConnection::onHandshake(const error_code& error, size_t /*bytes*/) {
  waiting_ = false;
  if (error) {
    countCut();
    return;
  }
  waitForRequest();
}

// Waits for a request's first bytes with the keep-alive timeout, then reads the rest against the
// request deadline: an idle connection is closed quietly, a trickling one is cut.
void HttpsConnection::waitForRequest() {
  if (stopped_ || registry_.stopping()) {
    return;
  }
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
  // onHeader decides, naming the length (boost::none, "no limit", is broken in Boost 1.74).
  parser_->body_limit(std::numeric_limits<uint64_t>::max());
  if (buffer_.size() > 0) {
    readHeader();
    return;
  }
  waiting_ = true;
  expireAt(std::min(Clock::now() + options_.keep_alive_timeout, request_deadline_));
  stream_.async_read_next(
      buffer_.prepare(kReadBytes),
      beast::bind_front_handler(&HttpsConnection::onFirstBytes, shared_from_this()));
}

void HttpsConnection::onFirstBytes(const error_code& error, size_t bytes) {
  waiting_ = false;
  if (error) {
    return;
  }
  buffer_.commit(bytes);
  readHeader();
}

void HttpsConnection::readHeader() {
  expireAt(request_deadline_);
  http::async_read_header(
      stream_, buffer_, *parser_,
      beast::bind_front_handler(&HttpsConnection::onHeader, shared_from_this()));
}

// Decided from the headers alone, before any body is read: a body must announce its length, and
// that length must be within the cap, so neither a chunked stream nor a body running until the
// connection closes can exhaust memory.
void HttpsConnection::onHeader(const error_code& error, size_t /*bytes*/) {
  if (error == http::error::bad_content_length) {
    refuse(http::status::payload_too_large, "Content-Length is not a number within the limit of " +
                                                std::to_string(options_.max_body_bytes));
    return;
  }
  if (error == http::error::header_limit) {
    refuse(http::status::request_header_fields_too_large,
           "headers over the limit of " + std::to_string(options_.max_header_bytes) + " bytes");
    return;
  }
  if (error && isMalformed(error)) {
    refuse(http::status::bad_request, "malformed request: " + error.message());
    return;
  }
  if (error) {
    countCut();
    return;
  }
  const HttpRequest& request = parser_->get();
  if (parser_->chunked() || request.count(http::field::transfer_encoding) > 0) {
    refuse(http::status::length_required, "chunked bodies are not accepted: send Content-Length");
    return;
  }
  const boost::optional<uint64_t> length = parser_->content_length();
  if (!length && hasBody(request.method())) {
    refuse(http::status::length_required, "Content-Length is required");
    return;
  }
  if (length && *length > options_.max_body_bytes) {
    refuse(http::status::payload_too_large, "body of " + std::to_string(*length) +
                                                " bytes is over the limit of " +
                                                std::to_string(options_.max_body_bytes));
    return;
  }
  if (!parser_->is_done() && beast::iequals(request[http::field::expect], "100-continue")) {
    asio::async_write(
        stream_, asio::buffer(kContinue.data(), kContinue.size()),
        beast::bind_front_handler(&HttpsConnection::onContinueSent, shared_from_this()));
    return;
  }
  readBody();
}

void HttpsConnection::onContinueSent(const error_code& error, size_t /*bytes*/) {
  if (!error) {
    readBody();
  }
}

void HttpsConnection::readBody() {
  if (!parser_->is_done()) {
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpsConnection::onBody, shared_from_this()));
    return;
  }
  onBody({}, 0);
}

void HttpsConnection::onBody(const error_code& error, size_t /*bytes*/) {
  if (error) {
    countCut();
    return;
  }
  const HttpRequest& request = parser_->get();
  if (blocking_ != nullptr && options_.may_block(request)) {
    // A copy for the pool's thread: this one may reset the parser meanwhile (a deadline). The
    // work guard keeps the loop running until the answer is back on it, also after stop().
    asio::post(*blocking_, [self = shared_from_this(), request = HttpRequest(request),
                            work = asio::make_work_guard(stream_.get_executor())]() mutable {
      HttpResponse response = self->handler_(request);
      asio::post(
          self->stream_.get_executor(),
          [self, request = std::move(request), response = std::move(response),
           work = std::move(work)]() mutable { self->respond(request, std::move(response)); });
    });
    return;
  }
  respond(request, handler_(request));
}

void HttpsConnection::respond(const HttpRequest& request, HttpResponse response) {
  const bool keep_alive =
      request.keep_alive() && response.keep_alive() && !stopped_ && !registry_.stopping();
  response.version(request.version());
  answer(std::move(response), keep_alive);
}

void HttpsConnection::answer(HttpResponse response, bool keep_alive) {
  const bool head =
      parser_ && parser_->is_header_done() && parser_->get().method() == http::verb::head;
  keep_alive_ = keep_alive;
  response_ = std::move(response);
  response_.keep_alive(keep_alive);
  serializer_.emplace(response_);
  expireAt(Clock::now() + options_.write_timeout);
  auto done = beast::bind_front_handler(&HttpsConnection::onAnswered, shared_from_this());
  if (head) {
    http::async_write_header(stream_, *serializer_, std::move(done));
  } else {
    http::async_write(stream_, *serializer_, std::move(done));
  }
}

void HttpsConnection::onAnswered(const error_code& error, size_t /*bytes*/) {
  serializer_.reset();
  if (error) {
    return;
  }
  if (!keep_alive_) {
    closeLingering();
    return;
  }
  request_deadline_ = Clock::now() + options_.keep_alive_timeout + options_.request_timeout;
  response_ = {};
  if (buffer_.size() == 0 && buffer_.capacity() > kKeptBufferBytes) {
    buffer_.shrink_to_fit();
  }
  waitForRequest();
}

void HttpsConnection::refuse(http::status status, const std::string& message) {
  parser_.reset(); // a HEAD request's refusal is answered whole
  answer(textResponse(status, message + "\n"), false);
}

// Closing a socket with unread bytes makes the kernel send a reset, which can destroy an answer
// the client has not read yet. So: half-close, then drop what the client still sends (a refused
// body, its own TLS close) until it closes or refusal_linger passes, then close.
void HttpsConnection::closeLingering() {
  error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  discard_ = std::make_unique<char[]>(kReadBytes);
  expireAt(Clock::now() + options_.refusal_linger);
  discard();
}

void HttpsConnection::discard() {
  stream_.socket().async_read_some(asio::buffer(discard_.get(), kReadBytes),
                                   [self = shared_from_this()](const error_code& error, size_t) {
                                     if (!error) {
                                       self->discard();
                                     }
                                   });
}

void HttpsConnection::countCut() {
  if (timed_out_) {
    registry_.countCut();
  }
}

// Deadlines move at every step of every request; the timer is set anew only when one comes
// earlier than the timer's expiry (the write deadline, about once a request) or the timer has
// fired. A timer that fires before the current deadline waits again; a cancelled one, or one
// whose connection is gone, does nothing.
void HttpsConnection::expireAt(Clock::time_point deadline) {
  timed_out_ = false;
  current_deadline_ = deadline;
  if (deadline < deadline_.expiry() || deadline_.expiry() <= Clock::now()) {
    armTimer();
  }
}

void HttpsConnection::armTimer() {
  deadline_.expires_at(current_deadline_);
  deadline_.async_wait([weak = weak_from_this()](const error_code& error) {
    const std::shared_ptr<HttpsConnection> self = weak.lock();
    if (error || !self) {
      return;
    }
    if (self->current_deadline_ > Clock::now()) {
      self->armTimer();
      return;
    }
    self->timed_out_ = true;
    error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

} // namespace kube_rdma
