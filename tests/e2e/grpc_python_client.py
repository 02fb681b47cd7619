"""Python grpcio calling an arenarpc server's port (tests/e2e/grpc_test.cc runs it).

Usage: grpc_python_client.py PORT GEN_DIR MAX_MESSAGE_BYTES
GEN_DIR holds e2e_test_pb2.py (protoc --python_out). Prints "OK <case>" per passing case and
"FAIL <case>: <why>" otherwise; exits 1 if any case failed.
"""
import concurrent.futures
import re
import sys
import time
import urllib.request

port, gen_dir, max_message = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sys.path.insert(0, gen_dir)
import grpc  # noqa: E402
import e2e_test_pb2 as pb  # noqa: E402
from grpc_cases import case, expect, failures  # noqa: E402

target = f"127.0.0.1:{port}"


channel = grpc.insecure_channel(target)
echo = channel.unary_unary("/arenarpc.e2e.TestService/Echo",
                           request_serializer=pb.TestRequest.SerializeToString,
                           response_deserializer=pb.TestResponse.FromString)


def expect_status(fn, code, what):
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() == code, f"{what}: {e.code()} {e.details()!r}, want {code}")
        return e
    raise AssertionError(f"{what}: succeeded, want {code}")


@case("unary")
def _():
    r = echo(pb.TestRequest(message="hello", items=["a", "b"]), timeout=10)
    expect(r.message == "hello" and list(r.items) == ["a", "b"], f"reply {r}")


@case("metadata")
def _():
    r, call = echo.with_call(pb.TestRequest(message="m"), metadata=(("x-user", "v1"),), timeout=10)
    initial = dict(call.initial_metadata())
    expect(initial.get("x-user") == "v1-back", f"initial metadata {initial}")


@case("handler_error")
def _():
    e = expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=2004, fail_text="busy now"),
                                   timeout=10), grpc.StatusCode.UNAVAILABLE, "ELIMIT")
    expect("busy now" in e.details(), f"details {e.details()!r}")
    expect_status(lambda: echo(pb.TestRequest(message="f", fail_code=1003, fail_text="bad"),
                               timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "EREQUEST")


@case("unimplemented")
def _():
    nope = channel.unary_unary("/arenarpc.e2e.TestService/Nope")
    expect_status(lambda: nope(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED, "unknown method")
    nope = channel.unary_unary("/arenarpc.e2e.NoService/Echo")
    expect_status(lambda: nope(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED, "unknown service")


@case("unparsable_request")
def _():
    raw = channel.unary_unary("/arenarpc.e2e.TestService/Echo")
    # field 1 (required message) missing: the strategy's parse fails
    expect_status(lambda: raw(b"\x10\x01", timeout=10), grpc.StatusCode.INVALID_ARGUMENT, "parse")


@case("deadline_exceeded")
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


@case("cancellation")
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


@case("message_over_limit")
def _():
    big = pb.TestRequest(message="x" * (max_message + 1))
    expect_status(lambda: echo(big, timeout=10), grpc.StatusCode.RESOURCE_EXHAUSTED, "too large")
    r = echo(pb.TestRequest(message="small"), timeout=10)
    expect(r.message == "small", "call after the refused one")


@case("gzip")
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


@case("concurrent_calls_one_connection")
def _():
    n = 200
    futures = [echo.future(pb.TestRequest(message=f"c{i}", delay_ms=100), timeout=30)
               for i in range(n)]
    start = time.monotonic()
    results = [f.result() for f in futures]
    elapsed = time.monotonic() - start
    expect([r.message for r in results] == [f"c{i}" for i in range(n)], "replies")
    expect(elapsed < n * 0.1 / 4, f"{n} calls of 100 ms took {elapsed:.2f} s: not concurrent")


@case("health_check")
def _():
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    expect(check(b"", timeout=10) == b"\x08\x01", "overall SERVING")
    svc = b"arenarpc.e2e.TestService"
    expect(check(b"\x0a" + bytes([len(svc)]) + svc, timeout=10) == b"\x08\x01", "service SERVING")
    expect_status(lambda: check(b"\x0a\x04nope", timeout=10), grpc.StatusCode.NOT_FOUND, "unknown")


channel.close()
sys.exit(1 if failures else 0)
