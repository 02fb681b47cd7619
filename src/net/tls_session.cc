#include "net/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "net/tls_state.h"

namespace arenarpc::net {
namespace {

constexpr size_t kMaxRecordPlaintext = 16u << 10;  // TLS's largest record
constexpr size_t kMinDecryptSpace = 1024;

std::string NameToString(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return {};
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string text(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return text;
}

std::string Asn1String(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

std::string IpToString(const ASN1_OCTET_STRING* ip) {
  const unsigned char* b = ASN1_STRING_get0_data(ip);
  const int n = ASN1_STRING_length(ip);
  char text[64] = {};
  if (n == 4) {
    snprintf(text, sizeof(text), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
  } else if (n == 16) {
    for (int i = 0; i < 16; i += 2) {
      snprintf(text + strlen(text), sizeof(text) - strlen(text), i ? ":%x" : "%x", (b[i] << 8) | b[i + 1]);
    }
  }
  return text;
}

// The session's BIO: SSL reads ciphertext straight from the chain Decrypt() was given and writes
// records straight into output_, one copy each way (a memory BIO copies in and out again).
int ChainBioRead(BIO* bio, char* data, size_t len, size_t* read) {
  BIO_clear_retry_flags(bio);
  BufferChain* input = static_cast<TlsSession*>(BIO_get_data(bio))->input();
  if (input == nullptr || input->empty()) {
    BIO_set_retry_read(bio);  // "wait for more", not end of stream
    return 0;
  }
  *read = input->CopyTo(data, len);
  input->PopFront(*read);
  return 1;
}

int ChainBioWrite(BIO* bio, const char* data, size_t len, size_t* written) {
  BIO_clear_retry_flags(bio);
  static_cast<TlsSession*>(BIO_get_data(bio))->output().Append(std::string_view(data, len));
  *written = len;
  return 1;
}

long ChainBioCtrl(BIO* bio, int cmd, long /*num*/, void* /*ptr*/) {
  TlsSession* session = static_cast<TlsSession*>(BIO_get_data(bio));
  switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_PENDING:
      return session->input() == nullptr ? 0 : static_cast<long>(session->input()->size());
    case BIO_CTRL_WPENDING: return static_cast<long>(session->output().size());
    default: return 0;
  }
}

BIO_METHOD* ChainBioMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "arenarpc chain");
    BIO_meth_set_read_ex(m, ChainBioRead);
    BIO_meth_set_write_ex(m, ChainBioWrite);
    BIO_meth_set_ctrl(m, ChainBioCtrl);
    return m;
  }();
  return method;
}

}  // namespace

TlsSession::TlsSession(std::shared_ptr<const TlsContextState> context, SSL* ssl, bool server)
    : context_(std::move(context)), ssl_(ssl), server_(server) {
  BIO* bio = BIO_new(ChainBioMethod());
  BIO_set_data(bio, this);
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);  // the SSL owns the BIO now (one reference for both directions)
  if (server_) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::StartHandshake() {
  std::lock_guard lock(mutex_);
  Handshake();
}

std::string TlsSession::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void TlsSession::Fail(int ssl_result, int ssl_error) {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    if (!text.empty()) text += "; ";
    text += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(code));
  }
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    text += std::string(text.empty() ? "" : ": ") + "certificate: " +
            X509_verify_cert_error_string(verify);
  }
  if (text.empty()) {
    text = ssl_error == SSL_ERROR_SYSCALL ? "unexpected end of TLS stream"
                                          : "TLS error " + std::to_string(ssl_error) +
                                                " (result " + std::to_string(ssl_result) + ")";
  }
  error_ = std::move(text);
}

bool TlsSession::Handshake() {
  if (handshake_done()) return true;
  ERR_clear_error();
  const int result = SSL_do_handshake(ssl_);
  if (result == 1) {
    ReadPeer();
    handshake_done_.store(true, std::memory_order_release);
    return true;
  }
  const int ssl_error = SSL_get_error(ssl_, result);
  if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE) return true;
  Fail(result, ssl_error);
  return false;
}

void TlsSession::ReadPeer() {
  peer_.version = SSL_get_version(ssl_);
  if (const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_)) peer_.cipher = SSL_CIPHER_get_name(cipher);
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
  if (alpn != nullptr) peer_.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr) return;
  peer_.has_certificate = true;
  peer_.verified = SSL_get_verify_result(ssl_) == X509_V_OK;
  X509_NAME* subject = X509_get_subject_name(cert);
  peer_.subject = NameToString(subject);
  const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) peer_.common_name = Asn1String(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn)));
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    switch (name->type) {
      case GEN_DNS: peer_.sans.push_back("DNS:" + Asn1String(name->d.dNSName)); break;
      case GEN_IPADD: peer_.sans.push_back("IP:" + IpToString(name->d.iPAddress)); break;
      case GEN_URI: peer_.sans.push_back("URI:" + Asn1String(name->d.uniformResourceIdentifier)); break;
      case GEN_EMAIL: peer_.sans.push_back("email:" + Asn1String(name->d.rfc822Name)); break;
      default: break;
    }
  }
  GENERAL_NAMES_free(names);
}

TlsSession::Status TlsSession::Decrypt(BufferChain& ciphertext, BufferChain& plaintext) {
  std::lock_guard lock(mutex_);
  input_ = &ciphertext;  // SSL's reads take from it until it is empty
  const Status status = DecryptLocked(plaintext);
  input_ = nullptr;
  return status;
}

TlsSession::Status TlsSession::DecryptLocked(BufferChain& plaintext) {
  if (!Handshake()) return Status::kFailed;
  if (!handshake_done()) return Status::kOk;
  for (;;) {
    const std::span<char> space = plaintext.PrepareWrite(kMinDecryptSpace);
    ERR_clear_error();
    const int got = SSL_read(ssl_, space.data(), static_cast<int>(space.size()));
    if (got > 0) {
      plaintext.CommitWrite(static_cast<size_t>(got));
      continue;
    }
    const int ssl_error = SSL_get_error(ssl_, got);
    if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE) return Status::kOk;
    if (ssl_error == SSL_ERROR_ZERO_RETURN) return Status::kClosed;
    Fail(got, ssl_error);
    return Status::kFailed;
  }
}

size_t TlsSession::EncryptRecord(BufferChain& plaintext, BufferChain& ciphertext) {
  // A record at a time, moved out before the next: the output BIO holds one record.
  const std::span<const char> span = plaintext.span(0);
  const int n = static_cast<int>(std::min(span.size(), kMaxRecordPlaintext));
  ERR_clear_error();
  const int written = SSL_write(ssl_, span.data(), n);
  if (written <= 0) {
    Fail(written, SSL_get_error(ssl_, written));
    return 0;
  }
  plaintext.PopFront(static_cast<size_t>(written));
  TakeOutputLocked(ciphertext);
  return static_cast<size_t>(written);
}

void TlsSession::TakeOutputLocked(BufferChain& ciphertext) { ciphertext.Append(std::move(output_)); }

void TlsSession::TakeOutput(BufferChain& ciphertext) {
  std::lock_guard lock(mutex_);
  TakeOutputLocked(ciphertext);
}

bool TlsSession::HasOutput() const {
  std::lock_guard lock(mutex_);
  return !output_.empty();
}

bool TlsSession::InRecord() const {
  std::lock_guard lock(mutex_);
  // SSL keeps the part of a record it read so far in its own buffer: pending until complete.
  return !handshake_done() || SSL_has_pending(ssl_) == 1;
}

}  // namespace arenarpc::net
