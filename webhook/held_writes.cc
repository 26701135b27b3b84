#include "webhook/held_writes.h"

#include <openssl/bio.h>

#include <string>

namespace kube_rdma {
namespace {

struct Held {
  std::string bytes;
  bool holding = false;
};

// What a connection keeps between answers: the guide pod's answer (~1.7 KiB of TLS records)
// fits, a large /metrics answer gives its buffer back (1,000 idle connections, 4 MiB at most).
constexpr size_t kKeptCapacity = 4096;

int heldType() {
  static const int type = BIO_get_new_index() | BIO_TYPE_FILTER;
  return type;
}

Held* heldOf(BIO* bio) {
  return bio != nullptr && BIO_method_type(bio) == heldType()
             ? static_cast<Held*>(BIO_get_data(bio))
             : nullptr;
}

int create(BIO* bio) {
  BIO_set_data(bio, new Held);
  BIO_set_init(bio, 1);
  return 1;
}

int destroy(BIO* bio) {
  delete static_cast<Held*>(BIO_get_data(bio));
  BIO_set_data(bio, nullptr);
  return 1;
}

int write(BIO* bio, const char* data, size_t length, size_t* written) {
  auto* held = static_cast<Held*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (held->holding) {
    held->bytes.append(data, length);
    *written = length;
    return 1;
  }
  BIO* next = BIO_next(bio);
  if (next == nullptr) {
    return 0;
  }
  const int ok = BIO_write_ex(next, data, length, written);
  BIO_copy_next_retry(bio);
  return ok;
}

long control(BIO* bio, int command, long number, void* pointer) {
  auto* held = static_cast<Held*>(BIO_get_data(bio));
  BIO* next = BIO_next(bio);
  if (command == BIO_CTRL_FLUSH && held->holding) {
    return 1; // what is held leaves at releaseWrites()
  }
  if (command == BIO_CTRL_WPENDING) {
    return static_cast<long>(held->bytes.size()) +
           (next != nullptr ? BIO_ctrl(next, command, number, pointer) : 0);
  }
  if (next == nullptr) {
    return 0;
  }
  const long result = BIO_ctrl(next, command, number, pointer);
  BIO_copy_next_retry(bio);
  return result;
}

const BIO_METHOD* heldMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(heldType(), "kube-rdma held writes");
    if (m != nullptr) {
      BIO_meth_set_create(m, create);
      BIO_meth_set_destroy(m, destroy);
      BIO_meth_set_write_ex(m, write);
      BIO_meth_set_ctrl(m, control);
    }
    return m;
  }();
  return method;
}

} // namespace

bool holdWrites(SSL& ssl) {
  if (SSL_is_init_finished(&ssl) == 0) {
    return false;
  }
  BIO* socket = SSL_get_wbio(&ssl);
  Held* held = heldOf(socket);
  if (held == nullptr) {
    if (socket == nullptr || heldMethod() == nullptr) {
      return false;
    }
    BIO* filter = BIO_new(heldMethod());
    if (filter == nullptr) {
      return false;
    }
    if (BIO_up_ref(socket) != 1) {
      BIO_free(filter);
      return false;
    }
    // The SSL gives up its reference to the socket BIO; the filter holds the one taken above.
    BIO_push(filter, socket);
    SSL_set0_wbio(&ssl, filter);
    held = static_cast<Held*>(BIO_get_data(filter));
  }
  held->holding = true;
  return true;
}

bool releaseWrites(const SSL& ssl) {
  BIO* filter = SSL_get_wbio(&ssl);
  Held* held = heldOf(filter);
  if (held == nullptr) {
    return true;
  }
  held->holding = false;
  bool ok = true;
  BIO* next = BIO_next(filter);
  for (size_t done = 0; done < held->bytes.size();) {
    size_t written = 0;
    if (next == nullptr ||
        BIO_write_ex(next, held->bytes.data() + done, held->bytes.size() - done, &written) != 1) {
      ok = false;
      break;
    }
    done += written;
  }
  held->bytes.clear();
  if (held->bytes.capacity() > kKeptCapacity) {
    held->bytes.shrink_to_fit();
  }
  return ok;
}

size_t heldBytesForTest(const SSL& ssl) {
  const Held* held = heldOf(SSL_get_wbio(&ssl));
  return held != nullptr ? held->bytes.size() : 0;
}

} // namespace kube_rdma
