#include "webhook/certificate_store.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

namespace kube_rdma {
namespace {

// TLS 1.2 suites: ECDHE only (forward secrecy) with AEAD ciphers; TLS 1.3 suites are all strong.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string opensslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) {
    return "no details";
  }
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

using FilePtr = std::unique_ptr<FILE, int (*)(FILE*)>;

int selectCertificate(SSL* ssl, void* arg) {
  const auto* store = static_cast<const CertificateStore*>(arg);
  std::shared_ptr<const ServingCertificate> pair = store->current();
  if (pair == nullptr) {
    return 0; // no certificate yet: the handshake fails
  }
  // Takes its own references; the pair may be replaced while this connection lives.
  return SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1);
}

Result<std::shared_ptr<const ServingCertificate>>
loadServingCertificate(const std::string& cert_path, const std::string& key_path) {
  ERR_clear_error();
  FilePtr cert_file(std::fopen(cert_path.c_str(), "r"), &std::fclose);
  if (!cert_file) {
    return makeError("cannot open certificate " + cert_path);
  }
  X509* leaf = PEM_read_X509(cert_file.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) {
    return makeError("no PEM certificate in " + cert_path + ": " + opensslError());
  }
  STACK_OF(X509)* chain = sk_X509_new_null();
  while (X509* next = PEM_read_X509(cert_file.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(chain, next);
  }
  ERR_clear_error(); // the end of the file reads as an error
  FilePtr key_file(std::fopen(key_path.c_str(), "r"), &std::fclose);
  EVP_PKEY* key =
      key_file ? PEM_read_PrivateKey(key_file.get(), nullptr, nullptr, nullptr) : nullptr;
  // Owns all three from here, whatever goes wrong below.
  std::shared_ptr<const ServingCertificate> pair(new ServingCertificate{leaf, chain, key});
  if (!key_file) {
    return makeError("cannot open private key " + key_path);
  }
  if (key == nullptr) {
    return makeError("no PEM private key in " + key_path + ": " + opensslError());
  }
  if (X509_check_private_key(leaf, key) != 1) {
    ERR_clear_error();
    return makeError("private key " + key_path + " does not match certificate " + cert_path);
  }
  return pair;
}

} // namespace

ServingCertificate::~ServingCertificate() {
  X509_free(leaf);
  sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
}

std::chrono::system_clock::time_point ServingCertificate::notAfter() const {
  const ASN1_TIME* not_after = X509_get0_notAfter(leaf);
  struct tm tm {};
  if (ASN1_TIME_to_tm(not_after, &tm) != 1) {
    return {};
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

Status CertificateStore::reload() {
  Result<std::shared_ptr<const ServingCertificate>> loaded =
      loadServingCertificate(cert_path_, key_path_);
  if (!loaded.ok()) {
    return loaded.error();
  }
  current_.store(*loaded);
  return Ok{};
}

bool CertificateStore::configure(SSL_CTX& ctx) {
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(&ctx, kTls12Ciphers) != 1) {
    return false;
  }
  SSL_CTX_set_cert_cb(&ctx, selectCertificate, this);
  return true;
}

} // namespace kube_rdma
