#pragma once

#include <openssl/ssl.h>

#include <cstddef>

// One write() per HTTP answer on a TLS connection. cpp-httplib 0.11.4 writes an answer's status
// line and headers, then its body, with two SSL_writes: two TLS records and two write()
// syscalls (each ~3-5 us on this VM). A filter BIO put on the connection's write side holds
// what TLS writes between holdWrites() and releaseWrites() and passes every other write
// straight to the socket, so handshake messages, session tickets, alerts and close_notify are
// never held. Only the write side: read-side buffering would hide bytes from httplib's poll().
// A connection is served by one thread, which makes both calls.
namespace kube_rdma {

// Starts holding what TLS writes on `ssl`; the BIO is put in place on the first call for a
// connection. False (nothing held, writes go out as before) when `ssl` is still in its
// handshake or the BIO cannot be put in place.
bool holdWrites(SSL& ssl);

// Writes what is held in one write() and passes writes through again. False when that write
// failed: part of an answer may be lost, so the caller must end the connection. True when
// nothing was held.
bool releaseWrites(const SSL& ssl);

// Bytes held now (tests).
size_t heldBytesForTest(const SSL& ssl);

} // namespace kube_rdma
