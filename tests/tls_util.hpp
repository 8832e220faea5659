// Certificates for the TLS tests, made with OpenSSL's API in a temporary
// directory: a cluster CA, certificates it signs (valid, or expired), and a
// second CA whose certificates the cluster must refuse. TestPki asserts
// (REQUIRE) as it goes, so it is used on the test's main thread only
// (Catch2 2.x is not thread-safe): certificates are made before any thread
// or endpoint that uses them starts.
#pragma once

#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <string>

#include "actorflow/comm/tls.hpp"

namespace actorflow {
namespace test {

class TestPki {
 public:
  explicit TestPki(const std::string& dir) : dir_(dir) {
    ca_key_ = NewKey();
    ca_ = MakeCert("cluster CA", ca_key_, nullptr, nullptr, 0, 30 * 24 * 3600, true);
    Write(dir_ + "/ca.pem", ca_);
    other_key_ = NewKey();
    other_ca_ = MakeCert("another CA", other_key_, nullptr, nullptr, 0, 30 * 24 * 3600, true);
    Write(dir_ + "/other_ca.pem", other_ca_);
  }
  ~TestPki() {
    X509_free(ca_);
    X509_free(other_ca_);
    EVP_PKEY_free(ca_key_);
    EVP_PKEY_free(other_key_);
  }

  /// A certificate and key named `name` in the directory, signed by the
  /// cluster CA (or the other one), valid now (or expired an hour ago).
  TlsOptions Issue(const std::string& name, bool other_ca = false, bool expired = false) {
    EVP_PKEY* key = NewKey();
    X509* cert = MakeCert(name, key, other_ca ? other_ca_ : ca_, other_ca ? other_key_ : ca_key_,
                          expired ? -2 * 3600 : 0, expired ? -3600 : 30 * 24 * 3600, false);
    TlsOptions t;
    t.cert = dir_ + "/" + name + ".pem";
    t.key = dir_ + "/" + name + ".key";
    t.ca = dir_ + "/ca.pem";
    Write(t.cert, cert);
    FILE* f = std::fopen(t.key.c_str(), "w");
    REQUIRE(f);
    REQUIRE(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
    std::fclose(f);
    X509_free(cert);
    EVP_PKEY_free(key);
    return t;
  }
  /// As Issue, but signed by an intermediate CA the cluster CA signed; the
  /// certificate file holds the certificate and then the intermediate.
  TlsOptions IssueViaIntermediate(const std::string& name) {
    EVP_PKEY* mid_key = NewKey();
    X509* mid = MakeCert(name + " intermediate CA", mid_key, ca_, ca_key_, 0, 30 * 24 * 3600, true);
    EVP_PKEY* key = NewKey();
    X509* cert = MakeCert(name, key, mid, mid_key, 0, 30 * 24 * 3600, false);
    TlsOptions t;
    t.cert = dir_ + "/" + name + ".pem";
    t.key = dir_ + "/" + name + ".key";
    t.ca = dir_ + "/ca.pem";
    FILE* f = std::fopen(t.cert.c_str(), "w");
    REQUIRE(f);
    REQUIRE(PEM_write_X509(f, cert) == 1);
    REQUIRE(PEM_write_X509(f, mid) == 1);
    std::fclose(f);
    f = std::fopen(t.key.c_str(), "w");
    REQUIRE(f);
    REQUIRE(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
    std::fclose(f);
    X509_free(cert);
    X509_free(mid);
    EVP_PKEY_free(key);
    EVP_PKEY_free(mid_key);
    return t;
  }
  std::string other_ca_path() const { return dir_ + "/other_ca.pem"; }

 private:
  static EVP_PKEY* NewKey() {
    EVP_PKEY* k = EVP_EC_gen("P-256");
    REQUIRE(k);
    return k;
  }
  static X509* MakeCert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long from,
                        long until, bool is_ca) {
    static long serial = 1;
    X509* c = X509_new();
    X509_set_version(c, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c), serial++);
    X509_gmtime_adj(X509_getm_notBefore(c), from);
    X509_gmtime_adj(X509_getm_notAfter(c), until);
    X509_set_pubkey(c, key);
    X509_NAME* name = X509_get_subject_name(c);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
    if (is_ca) {
      X509V3_CTX ctx;
      X509V3_set_ctx_nodb(&ctx);
      X509V3_set_ctx(&ctx, c, c, nullptr, nullptr, 0);
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE");
      X509_add_ext(c, ext, -1);
      X509_EXTENSION_free(ext);
    }
    REQUIRE(X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return c;
  }
  static void Write(const std::string& path, X509* cert) {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    REQUIRE(PEM_write_X509(f, cert) == 1);
    std::fclose(f);
  }

  std::string dir_;
  EVP_PKEY* ca_key_;
  EVP_PKEY* other_key_;
  X509* ca_;
  X509* other_ca_;
};

}  // namespace test
}  // namespace actorflow
