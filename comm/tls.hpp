// Mutual TLS for a cluster: the files every task and client of a secured
// cluster holds (its certificate and key, signed by the one cluster CA, and
// that CA), checked before anything listens or connects.
//
// Both paths use them: CAF's openssl module for control messages and the
// tensor transport's TLS 1.3 connections (comm/tensor_transport.hpp). Each side
// requires the other's certificate and verifies it against the CA: a
// plaintext peer, a certificate from another CA and an expired certificate
// are refused. Who a peer is, beyond "the cluster CA signed it", is not
// checked: use one CA per cluster (README, "Distributed", threat model).
#pragma once

#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {

struct TlsOptions {
  std::string cert;  // PEM certificate of this task or client
  std::string key;   // PEM private key of `cert`
  std::string ca;    // PEM certificate of the cluster CA
  std::string key_passphrase;  // when the key is encrypted
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

/// InvalidArgument naming the file and the reason unless every file reads as
/// PEM, the key belongs to the certificate, and the certificate verifies
/// against the CA now (signed by it, not expired, not yet valid).
Status CheckTlsFiles(const TlsOptions& tls);

/// Whether CAF's TLS calls reach comm/openssl_error_queue.cpp's workaround
/// (OpenSSL's error queue cleared before each read, write and handshake):
/// false when the process's symbol lookup finds libssl before libactorflow.
bool OpenSslErrorQueueCleared();

}  // namespace actorflow
