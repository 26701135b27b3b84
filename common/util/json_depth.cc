#include "common/util/json_depth.h"

namespace kube_rdma {

bool jsonNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      // Strings are most of a document: skip to the closing quote, the next one after an even
      // number of backslashes, with find (memchr) rather than byte by byte.
      size_t backslashes = 1;
      while (backslashes % 2 == 1) {
        i = text.find('"', i + 1);
        if (i == std::string_view::npos) {
          return false;
        }
        backslashes = 0; // the opening quote ends the run at the latest
        while (text[i - 1 - backslashes] == '\\') {
          ++backslashes;
        }
      }
    } else if ((c == '[' || c == '{') && ++depth > max_depth) {
      return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

} // namespace kube_rdma
