// OpenSSL's error queue, emptied before each TLS read, write and handshake of
// this process: a workaround for CAF 0.17's OpenSSL module.
//
// SSL_get_error() is right only if the calling thread's error queue was empty
// when the I/O call began (SSL_get_error(3)). CAF 0.17's caf/openssl/session
// never empties it: it neither clears it before SSL_read/SSL_write nor drains
// it after a failure. With OpenSSL 3 a peer that closes its TCP connection
// without close_notify (every CAF peer does, at the end of its process) leaves
// "unexpected eof while reading" queued in the multiplexer's thread; the next
// read on any other connection of that thread that would block then reads as
// SSL_ERROR_SSL, and CAF closes that healthy connection: a ps whose first
// worker finished dropped the chief too (remote_link_unreachable), under
// mutual TLS only. (Boost.Asio's SSL engine, the tensor transport's, clears
// the queue itself.)
//
// How: this library defines SSL_read, SSL_write, SSL_connect and SSL_accept;
// it precedes libssl in the process's symbol lookup (libssl is its
// dependency), so CAF's calls come here, clear the queue, and go on to
// OpenSSL's own functions (dlsym RTLD_NEXT). Nothing else changes: an empty
// queue before an I/O call is what OpenSSL requires of every caller.
// tls_test ("a peer that leaves takes no other peer's connection with it")
// fails without this. A program whose lookup finds libssl first (it links
// libssl before libactorflow, or preloads it) runs without the workaround:
// OpenSslErrorQueueCleared() says so, and a TLS runtime warns.
#include "actorflow/comm/tls.hpp"

#include <dlfcn.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstdlib>

namespace {

template <class Fn>
Fn OpenSslOwn(const char* name) {
  void* fn = ::dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "actorflow: OpenSSL's %s not found after libactorflow (dlsym: %s)\n", name, ::dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// An address of this library's, to tell which object a symbol comes from.
void Marker() {}

}  // namespace

namespace actorflow {

bool OpenSslErrorQueueCleared() {
  void* first = ::dlsym(RTLD_DEFAULT, "SSL_read");
  Dl_info found{}, ours{};
  if (first == nullptr || ::dladdr(first, &found) == 0 || ::dladdr(reinterpret_cast<void*>(&Marker), &ours) == 0)
    return false;
  return found.dli_fbase == ours.dli_fbase;
}

}  // namespace actorflow

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto own = OpenSslOwn<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return own(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto own = OpenSslOwn<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return own(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static const auto own = OpenSslOwn<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return own(ssl);
}

int SSL_accept(SSL* ssl) {
  static const auto own = OpenSslOwn<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return own(ssl);
}

}  // extern "C"
