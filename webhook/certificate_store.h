#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "common/util/result.h"

// The serving certificate and key, read from PEM files and replaced as a whole so a rotation never
// mixes halves. TLS handshakes take the current pair through SSL_CTX_set_cert_cb, so connections
// opened after a reload use the new certificate and open ones are not disturbed.
namespace kube_rdma {

// One certificate chain and its key. Owns its OpenSSL objects.
struct ServingCertificate {
  ~ServingCertificate();
  std::chrono::system_clock::time_point notAfter() const;

  X509* leaf;
  STACK_OF(X509) * chain; // intermediates after the leaf, may be empty
  EVP_PKEY* key;
};

class CertificateStore {
public:
  CertificateStore(std::string cert_path, std::string key_path)
      : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}

  // Reads both files again: a PEM chain (leaf first) and a PEM key that belongs to it. On error the
  // pair in use stays and the error, naming the file and what was wrong, is returned.
  Status reload();
  // nullptr until a reload succeeded.
  std::shared_ptr<const ServingCertificate> current() const { return current_.load(); }

  // TLS 1.2 at the least, AEAD ciphers with forward secrecy, and the certificate callback that
  // hands each handshake the current pair. For HttpsServer's TLS set-up callback.
  bool configure(SSL_CTX& ctx);

private:
  std::string cert_path_;
  std::string key_path_;
  std::atomic<std::shared_ptr<const ServingCertificate>> current_;
};

} // namespace kube_rdma
