#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

// The serving certificate and key, read from PEM files and replaced as a whole so a rotation never
// mixes halves. TLS handshakes take the current pair through SSL_CTX_set_cert_cb, so connections
// opened after a reload use the new certificate and open ones are not disturbed.
namespace kube_rdma {

// One certificate chain and its key. Owns its OpenSSL objects.
class ServingCertificate {
public:
  ServingCertificate(X509* leaf, STACK_OF(X509) * chain, EVP_PKEY* key);
  ~ServingCertificate();
  ServingCertificate(const ServingCertificate&) = delete;
  ServingCertificate& operator=(const ServingCertificate&) = delete;

  X509* leaf() const { return leaf_; }
  STACK_OF(X509) * chain() const { return chain_; }
  EVP_PKEY* key() const { return key_; }
  std::chrono::system_clock::time_point notAfter() const;

private:
  X509* leaf_;
  STACK_OF(X509) * chain_; // intermediates after the leaf, may be empty
  EVP_PKEY* key_;
};

// Parses a PEM certificate chain (leaf first) and a PEM private key; checks that they belong
// together. Errors name the file and what was wrong.
Result<std::shared_ptr<const ServingCertificate>>
loadServingCertificate(const std::string& cert_path, const std::string& key_path);

class CertificateStore {
public:
  CertificateStore(std::string cert_path, std::string key_path)
      : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}

  // Reads both files again. On error the pair in use stays and the error is returned.
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
