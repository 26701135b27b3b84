#include "plugin/http_message.h"

#include <cstring>
#include <utility>

namespace kube_rdma {
namespace {

// RFC 9110 token characters (methods and header names).
bool isTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool isToken(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (const char c : text) {
    if (c == '\0' || !isTokenChar(c)) {
      return false;
    }
  }
  return true;
}

// Visible ASCII only: no spaces, controls or bytes above 0x7e in a request target.
bool isTargetText(std::string_view text) {
  for (const char c : text) {
    if (c <= 0x20 || c >= 0x7f) {
      return false;
    }
  }
  return true;
}

std::string_view reasonPhrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Unknown";
  }
}

// The next line of `rest` without its terminator (CRLF or LF); advances `rest` past it.
std::string_view nextLine(std::string_view& rest) {
  const auto lf = rest.find('\n');
  std::string_view line = rest.substr(0, lf);
  rest.remove_prefix(lf == std::string_view::npos ? rest.size() : lf + 1);
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

} // namespace

size_t requestHeadLength(std::string_view buffer) {
  // The head ends at the first empty line: "\n\n" or "\n\r\n".
  for (size_t lf = buffer.find('\n'); lf != std::string_view::npos;
       lf = buffer.find('\n', lf + 1)) {
    if (lf + 1 < buffer.size() && buffer[lf + 1] == '\n') {
      return lf + 2;
    }
    if (lf + 2 < buffer.size() && buffer[lf + 1] == '\r' && buffer[lf + 2] == '\n') {
      return lf + 3;
    }
  }
  return 0;
}

Result<HttpRequestHead> parseRequestHead(std::string_view head) {
  std::string_view rest = head;
  const std::string_view line = nextLine(rest);
  const auto first_space = line.find(' ');
  const auto second_space =
      first_space == std::string_view::npos ? first_space : line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos ||
      line.find(' ', second_space + 1) != std::string_view::npos) {
    return makeError("request line is not 'METHOD TARGET HTTP/1.x'");
  }
  const std::string_view method = line.substr(0, first_space);
  const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
  const std::string_view version = line.substr(second_space + 1);
  if (!isToken(method)) {
    return makeError("request method is not a token");
  }
  if (target.empty() || target.front() != '/' || !isTargetText(target)) {
    return makeError("request target is not an absolute path");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return makeError("HTTP version is not HTTP/1.0 or HTTP/1.1");
  }
  while (!rest.empty()) {
    const std::string_view header = nextLine(rest);
    if (header.empty()) {
      break; // the blank line that ends the head
    }
    const auto colon = header.find(':');
    // No whitespace before the colon (RFC 9112 5.1) and no obsolete line folding.
    if (colon == std::string_view::npos || !isToken(header.substr(0, colon))) {
      return makeError("malformed header line");
    }
    for (const char c : header.substr(colon + 1)) {
      if (c == '\0' || c == '\r' || c == '\n') {
        return makeError("control character in a header value");
      }
    }
  }
  HttpRequestHead out;
  out.method = method;
  out.target = target;
  out.path = target.substr(0, target.find('?'));
  return out;
}

HttpResponse respondToHead(std::string_view head, const HttpHandler& handler) {
  auto request = parseRequestHead(head);
  if (!request) {
    return plainResponse(400, request.error().message);
  }
  if (request->method != "GET") {
    return plainResponse(405, "method " + request->method + " is not served here; use GET");
  }
  return handler(*request);
}

std::string serializeResponse(const HttpResponse& response) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " ";
  out += reasonPhrase(response.status);
  out += "\r\nContent-Type: " + response.content_type;
  out += "\r\nContent-Length: " + std::to_string(response.body.size());
  if (response.status == 405) {
    out += "\r\nAllow: GET";
  }
  out += "\r\nConnection: close\r\n\r\n";
  out += response.body;
  return out;
}

HttpResponse plainResponse(int status, std::string message) {
  HttpResponse out;
  out.status = status;
  out.body = std::move(message);
  if (!out.body.empty() && out.body.back() != '\n') {
    out.body += '\n';
  }
  return out;
}

} // namespace kube_rdma
