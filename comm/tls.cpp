#include "actorflow/comm/tls.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cstdio>
#include <memory>

namespace actorflow {

namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "not PEM";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

int Passphrase(char* buf, int size, int, void* user) {
  const std::string* p = static_cast<const std::string*>(user);
  if (!p || p->empty() || static_cast<int>(p->size()) >= size) return 0;
  p->copy(buf, p->size());
  return static_cast<int>(p->size());
}

}  // namespace

Status CheckTlsFiles(const TlsOptions& tls) {
  ERR_clear_error();  // what this thread left there is not about these files
  if (tls.cert.empty() || tls.key.empty() || tls.ca.empty())
    return errors::InvalidArgument("mutual TLS needs a certificate, its key and the cluster CA (--cert, --key, --ca)");
  File cf(std::fopen(tls.cert.c_str(), "r"));
  if (!cf) return errors::InvalidArgument("certificate '", tls.cert, "' cannot be read");
  std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_X509(cf.get(), nullptr, nullptr, nullptr), X509_free);
  if (!cert) return errors::InvalidArgument("certificate '", tls.cert, "' is not a PEM certificate: ", OpenSslError());
  // Certificates after the first are its chain (intermediate CAs), sent to
  // peers with it and used here, untrusted, to reach the cluster CA.
  struct ChainFree {
    void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
  };
  std::unique_ptr<STACK_OF(X509), ChainFree> chain(sk_X509_new_null());
  if (!chain) return errors::ResourceExhausted("no memory to read certificate '", tls.cert, "'");
  while (X509* next = PEM_read_X509(cf.get(), nullptr, nullptr, nullptr)) {
    if (sk_X509_push(chain.get(), next) <= 0) {
      X509_free(next);
      return errors::ResourceExhausted("no memory to read certificate '", tls.cert, "'");
    }
  }
  ERR_clear_error();  // the end of the file reads as "no start line"
  File kf(std::fopen(tls.key.c_str(), "r"));
  if (!kf) return errors::InvalidArgument("key '", tls.key, "' cannot be read");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_PrivateKey(kf.get(), nullptr, Passphrase, const_cast<std::string*>(&tls.key_passphrase)),
      EVP_PKEY_free);
  if (!key)
    return errors::InvalidArgument("key '", tls.key, "' is not a PEM private key (or its passphrase is wrong): ",
                                   OpenSslError());
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return errors::InvalidArgument("key '", tls.key, "' does not belong to certificate '", tls.cert, "'");
  }
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  if (!store || X509_STORE_load_file(store.get(), tls.ca.c_str()) != 1)
    return errors::InvalidArgument("CA '", tls.ca, "' is not a PEM certificate: ", OpenSslError());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), chain.get()) != 1)
    return errors::ResourceExhausted("no memory to verify certificate '", tls.cert, "'");
  if (X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return errors::InvalidArgument("certificate '", tls.cert, "' does not verify against CA '", tls.ca,
                                   "': ", X509_verify_cert_error_string(err));
  }
  return Status::OK();
}

}  // namespace actorflow
