#!/usr/bin/python3
"""TLS clients for tls_test.cc, on Python's ssl module (OpenSSL underneath, not arenarpc's code).

  echo PORT CA MESSAGE [CERT KEY]  baidu_std Echo inside TLS; prints the reply's message
  garbage PORT                     a real ClientHello, then garbage; prints "closed" or "open"
  stall PORT SECONDS               half a ClientHello, then nothing; prints the seconds until
                                   the server closed (or "open" after SECONDS)
  flood PORT CA N                  N handshakes at once (each then one Echo); prints "ok=<n> failed=<n>"
  grpc PORT CA MESSAGE             gRPC (grpcio, h2 by ALPN) Echo inside TLS; prints the reply's message
"""
import asyncio
import socket
import ssl
import struct
import sys
import time


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, payload):  # a length-delimited field
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def echo_frame(message, correlation_id=1):
    request_meta = field(1, b"arenarpc.e2e.TestService") + field(2, b"Echo")
    meta = field(1, request_meta) + varint(4 << 3) + varint(correlation_id)
    payload = field(1, message.encode())
    return b"PRPC" + struct.pack(">II", len(meta) + len(payload), len(meta)) + meta + payload


def read_exact(read, n):
    data = b""
    while len(data) < n:
        chunk = read(n - len(data))
        if not chunk:
            raise EOFError("server closed")
        data += chunk
    return data


def first_string_field(payload, number):
    """The first length-delimited field `number` of a protobuf message (enough for TestResponse)."""
    i = 0
    while i < len(payload):
        key, i = decode_varint(payload, i)
        wire = key & 7
        if wire == 0:
            _, i = decode_varint(payload, i)
        elif wire == 2:
            length, i = decode_varint(payload, i)
            if key >> 3 == number:
                return payload[i:i + length].decode()
            i += length
        else:
            raise ValueError("unexpected wire type %d" % wire)
    return None


def decode_varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def parse_reply(read):
    header = read_exact(read, 12)
    if header[:4] != b"PRPC":
        raise ValueError("not a baidu_std reply: %r" % header)
    body_size, meta_size = struct.unpack(">II", header[4:])
    body = read_exact(read, body_size)
    return first_string_field(body[meta_size:], 1)


def client_context(ca, cert=None, key=None):
    context = ssl.create_default_context(cafile=ca)
    if cert:
        context.load_cert_chain(cert, key)
    return context


def echo(port, ca, message, cert=None, key=None):
    context = client_context(ca, cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(echo_frame(message))
            print(parse_reply(tls.recv))
            print(tls.version())


def client_hello():
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def wait_closed(sock, seconds):
    """Seconds until the peer closed the socket (bytes it sends before are skipped), or None."""
    start = time.monotonic()
    sock.settimeout(0.05)
    while time.monotonic() - start < seconds:
        try:
            if not sock.recv(4096):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    return None


def garbage(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(client_hello() + b"\x17\x03\x03\x00\x10" + b"garbage!" * 64)
        print("closed" if wait_closed(sock, 10) is not None else "open")


def stall(port, seconds):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        hello = client_hello()
        sock.sendall(hello[: len(hello) // 2])
        closed = wait_closed(sock, seconds)
        print("open" if closed is None else "%.3f" % closed)


async def one_handshake(port, context, index):
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost"), 60)
    try:
        writer.write(echo_frame("flood-%d" % index, index + 1))
        await writer.drain()
        header = await asyncio.wait_for(reader.readexactly(12), 60)
        body_size, meta_size = struct.unpack(">II", header[4:])
        body = await reader.readexactly(body_size)
        return first_string_field(body[meta_size:], 1) == "flood-%d" % index
    finally:
        writer.close()


async def flood(port, ca, n):
    context = client_context(ca)
    results = await asyncio.gather(*(one_handshake(port, context, i) for i in range(n)),
                                   return_exceptions=True)
    ok = sum(1 for r in results if r is True)
    errors = [r for r in results if r is not True]
    print("ok=%d failed=%d%s" % (ok, n - ok, (" first=%r" % errors[0]) if errors else ""))


def grpc_echo(port, ca, message):
    import grpc  # python3-grpcio; imported here so that the other commands do not need it
    credentials = grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
    with grpc.secure_channel("localhost:%d" % port, credentials) as channel:
        call = channel.unary_unary("/arenarpc.e2e.TestService/Echo",
                                   request_serializer=lambda b: b, response_deserializer=lambda b: b)
        reply = call(field(1, message.encode()), timeout=10)
    print(first_string_field(reply, 1))


def main():
    command, port = sys.argv[1], int(sys.argv[2])
    if command == "echo":
        echo(port, sys.argv[3], sys.argv[4], *sys.argv[5:7])
    elif command == "garbage":
        garbage(port)
    elif command == "stall":
        stall(port, float(sys.argv[3]))
    elif command == "flood":
        asyncio.run(flood(port, sys.argv[3], int(sys.argv[4])))
    elif command == "grpc":
        grpc_echo(port, sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    main()
