#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

// Real certificates for TLS tests, made with OpenSSL's library: <dir>/ca.crt and ca.key, a CA;
// for each name, <dir>/<name>.crt and <name>.key, a certificate for 127.0.0.1 and localhost
// signed by it (serving, or a client's, which may be used for any purpose). P-256 keys, made in
// the test's process: an RSA-2048 key takes 0.1-0.5 s and the openssl program a process start
// under the sanitizers, for every test (webhook_faults and bench_https.sh use the openssl program
// with RSA keys, as cert-manager makes by default).
namespace kube_rdma {
namespace test_certificates {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;

inline bool addExtension(X509* issuer, X509* subject, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx(&context, issuer, subject, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  const bool added = extension != nullptr && X509_add_ext(subject, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return added;
}

// A certificate for `key` named `common_name`, signed by the issuer (itself when null).
inline Certificate makeCertificate(EVP_PKEY* key, const std::string& common_name, long serial,
                                   X509* issuer, EVP_PKEY* issuer_key) {
  Certificate certificate(X509_new(), X509_free);
  X509* c = certificate.get();
  const bool is_ca = issuer == nullptr;
  bool made =
      X509_set_version(c, 2) == 1 && ASN1_INTEGER_set(X509_get_serialNumber(c), serial) == 1 &&
      X509_gmtime_adj(X509_getm_notBefore(c), -60) != nullptr &&
      X509_gmtime_adj(X509_getm_notAfter(c), 2L * 24 * 3600) != nullptr &&
      X509_set_pubkey(c, key) == 1 &&
      X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) == 1 &&
      X509_set_issuer_name(c, X509_get_subject_name(is_ca ? c : issuer)) == 1;
  if (is_ca) {
    made = made && addExtension(c, c, NID_basic_constraints, "critical,CA:TRUE") &&
           addExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") &&
           addExtension(c, c, NID_subject_key_identifier, "hash");
  } else {
    made = made && addExtension(issuer, c, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost") &&
           addExtension(issuer, c, NID_authority_key_identifier, "keyid");
  }
  made = made && X509_sign(c, is_ca ? key : issuer_key, EVP_sha256()) > 0;
  return made ? std::move(certificate) : Certificate(nullptr, X509_free);
}

inline bool writePem(const std::filesystem::path& key_file, EVP_PKEY* key,
                     const std::filesystem::path& certificate_file, X509* certificate) {
  std::unique_ptr<FILE, decltype(&std::fclose)> key_out(std::fopen(key_file.c_str(), "w"),
                                                        std::fclose);
  std::unique_ptr<FILE, decltype(&std::fclose)> certificate_out(
      std::fopen(certificate_file.c_str(), "w"), std::fclose);
  return key_out && certificate_out &&
         PEM_write_PrivateKey(key_out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1 &&
         PEM_write_X509(certificate_out.get(), certificate) == 1;
}

} // namespace test_certificates

// What could not be made, or empty when every certificate was written.
inline std::string makeTestCertificates(const std::filesystem::path& dir,
                                        const std::vector<std::string>& names) {
  using test_certificates::Key;
  Key ca_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  test_certificates::Certificate ca =
      ca_key ? test_certificates::makeCertificate(ca_key.get(), "kube-rdma-test-ca", 1, nullptr,
                                                  nullptr)
             : test_certificates::Certificate(nullptr, X509_free);
  if (!ca || !test_certificates::writePem(dir / "ca.key", ca_key.get(), dir / "ca.crt", ca.get())) {
    return "the test CA in " + dir.string();
  }
  long serial = 2;
  for (const std::string& name : names) {
    Key key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    test_certificates::Certificate certificate =
        key ? test_certificates::makeCertificate(key.get(), name, serial++, ca.get(), ca_key.get())
            : test_certificates::Certificate(nullptr, X509_free);
    if (!certificate || !test_certificates::writePem(dir / (name + ".key"), key.get(),
                                                     dir / (name + ".crt"), certificate.get())) {
      return "the certificate " + name + " in " + dir.string();
    }
  }
  return "";
}

} // namespace kube_rdma
