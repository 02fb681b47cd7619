#pragma once
// TlsSession: one connection's TLS state over its own BIO. The connection keeps doing the socket
// I/O with its own buffers: ciphertext it read goes in through Decrypt(), plaintext to send goes
// through Encrypt(), and the records TLS produced (handshake, alerts, data) come out of
// TakeOutput() into the connection's write queue. The reading and the flushing thread may use a
// session at once (one mutex guards the SSL object).
//
// Memory: SSL reads ciphertext from the connection's chain into its record buffer (at most one
// record) and plaintext is encrypted one record (16 KiB) at a time into output_, which
// TakeOutput() moves on; the rest lives in the connection's counted buffers.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/controller.h"

typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace arenarpc::net {

struct TlsContextState;

class TlsSession {
 public:
  enum class Status { kOk, kClosed, kFailed };

  TlsSession(std::shared_ptr<const TlsContextState> context, SSL* ssl, bool server);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Client: starts the handshake (the ClientHello waits in TakeOutput()).
  void StartHandshake();
  // Consumes `ciphertext`, appends what it decrypts to `plaintext`. kClosed: the peer sent
  // close_notify; kFailed: see error().
  Status Decrypt(BufferChain& ciphertext, BufferChain& plaintext);
  // Consumes `plaintext` (only once handshake_done()), appending records to `ciphertext`. For
  // each record, `on_record(ciphertext.size(), plaintext bytes consumed so far)`: a plaintext byte
  // reaches the peer once its whole record did.
  template <typename OnRecord>
  bool Encrypt(BufferChain& plaintext, BufferChain& ciphertext, OnRecord&& on_record) {
    std::lock_guard lock(mutex_);
    if (!handshake_done()) return true;
    for (size_t consumed = 0; !plaintext.empty();) {
      const size_t n = EncryptRecord(plaintext, ciphertext);
      if (n == 0) return false;
      consumed += n;
      on_record(ciphertext.size(), consumed);
    }
    return true;
  }
  // Moves the records waiting to be sent to `ciphertext`.
  void TakeOutput(BufferChain& ciphertext);
  bool HasOutput() const;
  // Part of a record (or of the handshake) was received and waits for the rest.
  bool InRecord() const;

  bool handshake_done() const noexcept { return handshake_done_.load(std::memory_order_acquire); }
  // For the session's BIO only (called by SSL with mutex_ held): the ciphertext being decrypted
  // (nullptr outside Decrypt()) and the records SSL wrote that TakeOutput() has not moved yet.
  BufferChain* input() const noexcept { return input_; }
  BufferChain& output() noexcept { return output_; }
  // Valid once handshake_done() (never changes after).
  const TlsPeer& peer() const noexcept { return peer_; }
  // Why the session failed (OpenSSL's reason, and the certificate check's).
  std::string error() const;

 private:
  bool Handshake();  // mutex_ held; false = failed
  void Fail(int ssl_result, int ssl_error);  // mutex_ held
  Status DecryptLocked(BufferChain& plaintext);  // mutex_ held, input_ set
  void TakeOutputLocked(BufferChain& ciphertext);
  size_t EncryptRecord(BufferChain& plaintext, BufferChain& ciphertext);  // mutex_ held; 0 = failed
  void ReadPeer();

  std::shared_ptr<const TlsContextState> context_;  // keeps the SSL_CTX and its ALPN list alive
  SSL* ssl_;
  BufferChain* input_ = nullptr;  // mutex_; Decrypt()'s ciphertext while it runs
  BufferChain output_;             // mutex_; records SSL wrote, not yet taken
  const bool server_;
  mutable std::mutex mutex_;
  std::string error_;
  TlsPeer peer_;
  std::atomic<bool> handshake_done_{false};
};

}  // namespace arenarpc::net
