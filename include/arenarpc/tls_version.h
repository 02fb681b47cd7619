#pragma once
// The oldest TLS version a server or channel accepts (ServerTlsOptions, ChannelTlsOptions).
namespace arenarpc {

enum class TlsVersion { kTls12, kTls13 };  // older versions are never offered

}  // namespace arenarpc
