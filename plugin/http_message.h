#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kube_rdma {

// The plain-HTTP/1.1 pieces of the plugin's metrics endpoint as pure functions over strings, so
// they are tested without sockets. HttpServer does the I/O.

struct HttpRequestHead {
  std::string method;
  std::string target; // as sent, query included
  std::string path;   // target up to '?'
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequestHead&)>;

/**
 * @return the length of the request head at the start of `buffer`, blank line included, or 0 while
 *         the blank line has not arrived. Lines end in CRLF or, leniently, a bare LF.
 */
size_t requestHeadLength(std::string_view buffer);

/** Request line and header syntax of a complete head; the error says what is malformed. */
Result<HttpRequestHead> parseRequestHead(std::string_view head);

/** The answer to a complete head: 400 if malformed, 405 unless GET, else the handler's. */
HttpResponse respondToHead(std::string_view head, const HttpHandler& handler);

/** Status line, Content-Type, Content-Length, `Connection: close` (and `Allow: GET` on 405). */
std::string serializeResponse(const HttpResponse& response);

/** A text/plain answer with `message` as its body. */
HttpResponse plainResponse(int status, std::string message);

} // namespace kube_rdma
