"""Python grpcio calling an arenarpc server's port (tests/e2e/grpc_test.cc runs it).

Usage: grpc_python_client.py PORT GEN_DIR MAX_MESSAGE_BYTES [large]
GEN_DIR holds e2e_test_pb2.py (protoc --python_out). "large": only the cases with 4 MiB and 16 MiB
messages (the server's max_body_size must take them). Prints "OK <case>" per passing case and
"FAIL <case>: <why>" otherwise; exits 1 if any case failed.
"""
import concurrent.futures
import re
import sys
import time
import urllib.request

port, gen_dir, max_message = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
large = len(sys.argv) > 4 and sys.argv[4] == "large"
sys.path.insert(0, gen_dir)
import grpc  # noqa: E402
import e2e_test_pb2 as pb  # noqa: E402
from py_cases import case, expect, expect_status, finish  # noqa: E402

target = f"127.0.0.1:{port}"


channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", -1),
                                                  ("grpc.max_receive_message_length", -1)])
echo = channel.unary_unary("/arenarpc.e2e.TestService/Echo",
                           request_serializer=pb.TestRequest.SerializeToString,
                           response_deserializer=pb.TestResponse.FromString)


@case("unary", skip=large)
def _():
    r = echo(pb.TestRequest(message="hello", items=["a", "b"]), timeout=10)
    expect(r.message == "hello" and list(r.items) == ["a", "b"], f"reply {r}")


@case("metadata", skip=large)
def _():
    r, call = echo.with_call(pb.TestRequest(message="m"), metadata=(("x-user", "v1"),), timeout=10)
    initial = dict(call.initial_metadata())
    expect(initial.get("x-user") == "v1-back", f"initial metadata {initial}")


@case("handler_error", skip=large)
def _():
    e = expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=2004, fail_text="busy now"),
                                   timeout=10), grpc.StatusCode.UNAVAILABLE, "ELIMIT")
    expect("busy now" in e.details(), f"details {e.details()!r}")
    expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=1003, fail_text="bad"),
                               timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "EREQUEST")


@case("unimplemented", skip=large)
def _():
    nope = channel.unary_unary("/arenarpc.e2e.TestService/Nope")
    e = expect_status(lambda: nope(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED,
                      "unknown method")
    expect(e.details() == "Method not found: arenarpc.e2e.TestService/Nope", repr(e.details()))
    nope = channel.unary_unary("/arenarpc.e2e.NoService/Echo")
    e = expect_status(lambda: nope(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED,
                      "unknown service")
    expect(e.details() == "Method not found: arenarpc.e2e.NoService/Echo", repr(e.details()))


@case("grpc_message_percent_encoded", skip=large)
def _():
    # '%', non-ASCII (UTF-8) and a control character: percent-encoded on the wire, decoded by
    # grpcio back to the same text
    text = "100% naïve → ✓\tend"
    e = expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=1003, fail_text=text),
                                   timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "EREQUEST")
    expect(e.details().endswith(text), f"details {e.details()!r}, want it to end with {text!r}")


@case("status_details", skip=large)
def _():
    details = bytes(range(256)) * 3  # any bytes: base64 on the wire
    e = expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=1003, fail_text="bad",
                                                  status_details=details), timeout=10),
                      grpc.StatusCode.INVALID_ARGUMENT, "EREQUEST")
    trailers = dict(e.trailing_metadata() or ())
    expect(trailers.get("grpc-status-details-bin") == details,
           f"grpc-status-details-bin {trailers.get('grpc-status-details-bin')!r:.80}")
    e = expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=1003, fail_text="bad"),
                                   timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "EREQUEST")
    expect("grpc-status-details-bin" not in dict(e.trailing_metadata() or ()), "details unset")


@case("deflate_request", skip=large)
def _():
    # grpc-accept-encoding advertises deflate too: a deflate channel's requests are taken
    d = grpc.insecure_channel(target, compression=grpc.Compression.Deflate)
    decho = d.unary_unary("/arenarpc.e2e.TestService/Echo",
                          request_serializer=pb.TestRequest.SerializeToString,
                          response_deserializer=pb.TestResponse.FromString)
    text = "deflate me " * 500
    expect(decho(pb.TestRequest(message=text), timeout=10).message == text, "deflate echo")
    d.close()


def large_echo(size):
    # `size` bytes each way: the request's ballast (not echoed) and a reply of `size` bytes
    r = echo(pb.TestRequest(message="L", ballast=["b" * size], response_bytes=size), timeout=60)
    expect(len(r.message) == size and r.message == "r" * size, f"reply of {len(r.message)} bytes")


@case("message_4mib", skip=not large)
def _():
    large_echo(4 << 20)


@case("message_16mib", skip=not large)
def _():
    large_echo(16 << 20)
    futures = [echo.future(pb.TestRequest(message="L", ballast=["b" * (4 << 20)],
                                          response_bytes=16), timeout=60) for _ in range(8)]
    expect(all(len(f.result().message) == 16 for f in futures), "8 concurrent 4 MiB requests")


@case("unparsable_request", skip=large)
def _():
    raw = channel.unary_unary("/arenarpc.e2e.TestService/Echo")
    # field 1 (required message) missing: the strategy's parse fails
    expect_status(lambda: raw(b"\x10\x01", timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "parse")


@case("deadline_exceeded", skip=large)
def _():
    start = time.monotonic()
    expect_status(lambda: echo(pb.TestRequest(message="slow", delay_ms=3000), timeout=0.3),
                  grpc.StatusCode.DEADLINE_EXCEEDED, "deadline")
    expect(time.monotonic() - start < 2.5, "the deadline did not end the call early")


def method_in_flight():
    text = urllib.request.urlopen(f"http://{target}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith("arenarpc_server_method_in_flight") and "TestService.Echo\"" in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@case("cancellation", skip=large)
def _():
    # The handler replies only from NotifyOnCancel(): only the RST_STREAM can end it while the
    # connection stays open.
    future = echo.future(pb.TestRequest(message="c", reply_on_cancel=True), timeout=30)
    deadline = time.monotonic() + 10
    while method_in_flight() < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    expect(method_in_flight() >= 1, "the call never started")
    future.cancel()
    expect(future.cancelled(), "not cancelled")
    while method_in_flight() > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    expect(method_in_flight() == 0, "the handler was not canceled")
    r = echo(pb.TestRequest(message="after"), timeout=10)  # the connection still serves
    expect(r.message == "after", "call after cancel")


@case("message_over_limit", skip=large)
def _():
    big = pb.TestRequest(message="x" * (max_message + 1))
    expect_status(lambda: echo(big, timeout=10), grpc.StatusCode.RESOURCE_EXHAUSTED, "too large")
    r = echo(pb.TestRequest(message="small"), timeout=10)
    expect(r.message == "small", "call after the refused one")


@case("gzip", skip=large)
def _():
    text = "compressible " * 2000
    r, call = echo.with_call(pb.TestRequest(message=text, response_compress=2),
                             compression=grpc.Compression.Gzip, timeout=10)
    expect(r.message == text, "gzip echo")
    gz = grpc.insecure_channel(target, compression=grpc.Compression.Gzip)
    gecho = gz.unary_unary("/arenarpc.e2e.TestService/Echo",
                           request_serializer=pb.TestRequest.SerializeToString,
                           response_deserializer=pb.TestResponse.FromString)
    r = gecho(pb.TestRequest(message=text), timeout=10)
    expect(r.message == text, "gzip channel echo")
    gz.close()


@case("concurrent_calls_one_connection", skip=large)
def _():
    # Enough calls that one at a time would take 5 s; few enough that a server slowed down by
    # ThreadSanitizer starts them all within its admission's 100 ms window (more at once would
    # be a standing queue there, and refused: server.md, "Overload").
    n = 50
    futures = [echo.future(pb.TestRequest(message=f"c{i}", delay_ms=100), timeout=30)
               for i in range(n)]
    start = time.monotonic()
    results = [f.result() for f in futures]
    elapsed = time.monotonic() - start
    expect([r.message for r in results] == [f"c{i}" for i in range(n)], "replies")
    expect(elapsed < n * 0.1 / 4, f"{n} calls of 100 ms took {elapsed:.2f} s: not concurrent")


@case("health_check", skip=large)
def _():
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    expect(check(b"", timeout=10) == b"\x08\x01", "overall SERVING")
    svc = b"arenarpc.e2e.TestService"
    expect(check(b"\x0a" + bytes([len(svc)]) + svc, timeout=10) == b"\x08\x01", "service SERVING")
    expect_status(lambda: check(b"\x0a\x04nope", timeout=10), grpc.StatusCode.NOT_FOUND, "unknown")


channel.close()
finish()
