#pragma once

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

// A Logger's sink that a test can read while another thread logs: the Logger serialises its own
// writes, but a plain ostringstream read from the test's thread would race with them.
namespace kube_rdma {

class SharedLogSink : public std::ostream {
public:
  SharedLogSink() : std::ostream(&buffer_) {}
  std::string text() const {
    std::lock_guard<std::mutex> lock(buffer_.mutex);
    return buffer_.text;
  }

private:
  struct Buffer : std::streambuf {
    int_type overflow(int_type c) override {
      if (c != traits_type::eof()) {
        std::lock_guard<std::mutex> lock(mutex);
        text.push_back(static_cast<char>(c));
      }
      return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      std::lock_guard<std::mutex> lock(mutex);
      text.append(s, static_cast<size_t>(n));
      return n;
    }
    mutable std::mutex mutex;
    std::string text;
  };
  Buffer buffer_;
};

} // namespace kube_rdma
