"""Python grpcio calling an arenarpc server's streaming methods (tests/e2e/grpc_test.cc runs it).

Usage: grpc_stream_python_client.py PORT GEN_DIR [bytes]
GEN_DIR holds grpc_stream_test_pb2.py. "bytes": only the cases that check reply bytes (for the
other memory strategies); without it, every case. Prints "OK <case>" per passing case and
"FAIL <case>: <why>" otherwise; exits 1 if any case failed.
"""
import concurrent.futures
import sys
import threading
import time
import urllib.request

port, gen_dir = int(sys.argv[1]), sys.argv[2]
only_bytes = len(sys.argv) > 3 and sys.argv[3] == "bytes"
sys.path.insert(0, gen_dir)
import grpc  # noqa: E402
import grpc_stream_test_pb2 as pb  # noqa: E402
import py_cases  # noqa: E402
from py_cases import expect, finish  # noqa: E402

target = f"127.0.0.1:{port}"
BYTE_CASES = {"server_stream", "server_stream_metadata_and_status", "client_stream", "bidi"}


def case(name):
    return py_cases.case(name, skip=only_bytes and name not in BYTE_CASES)


channel = grpc.insecure_channel(target)
prefix = "/arenarpc.e2e.StreamService/"
ser = pb.StreamRequest.SerializeToString


def method(kind, name, raw=False):
    make = getattr(channel, kind)
    return make(prefix + name, request_serializer=ser,
                response_deserializer=None if raw else pb.StreamReply.FromString)


unary = method("unary_unary", "Unary")
server_stream = method("unary_stream", "ServerStream")
server_stream_raw = method("unary_stream", "ServerStream", raw=True)
client_stream = method("stream_unary", "ClientStream")
bidi_raw = method("stream_stream", "Bidi", raw=True)
push = method("unary_stream", "Push")


def metric(prefix, label=""):
    text = urllib.request.urlopen(f"http://{target}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(prefix) and label in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def in_flight(name):
    return metric("arenarpc_server_method_in_flight", f'StreamService.{name}"')


def wait_in_flight(name, want, seconds=10):
    deadline = time.monotonic() + seconds
    while in_flight(name) != want and time.monotonic() < deadline:
        time.sleep(0.01)
    return in_flight(name) == want


def expected_reply(text, index, items=(), nbytes=0):
    return pb.StreamReply(text=text, index=index, items=list(items),
                          payload=b"p" * nbytes).SerializeToString()


@case("unary_method_of_a_stream_service")
def _():
    r = unary(pb.StreamRequest(text="u"), timeout=10)
    expect(r.text == "u", f"reply {r}")


@case("server_stream")
def _():
    items = ["a", "bb", "ccc"]
    replies = list(server_stream_raw(pb.StreamRequest(text="s", count=50, items=items, bytes=10),
                                     timeout=10))
    expect(len(replies) == 50, f"{len(replies)} replies")
    for i, raw in enumerate(replies):
        expect(raw == expected_reply("s", i, items, 10), f"reply {i} bytes {raw!r}")


@case("server_stream_metadata_and_status")
def _():
    call = server_stream(pb.StreamRequest(text="f", count=2, fail_code=1, items=["x"]),
                         timeout=10, metadata=(("x-user", "u1"),))
    got = []
    try:
        for r in call:
            got.append(r.index)
        raise AssertionError("no error status")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.PERMISSION_DENIED, f"status {e.code()}")
        expect("f" in e.details(), f"details {e.details()!r}")
    expect(got == [0, 1], f"replies before the status {got}")
    initial = dict(call.initial_metadata())
    expect(initial.get("x-stream") == "u1-back", f"initial metadata {initial}")
    trailing = dict(call.trailing_metadata())
    expect(trailing.get("x-trailer") == "t", f"trailing metadata {trailing}")


@case("server_stream_empty")
def _():
    replies = list(server_stream(pb.StreamRequest(text="e", count=0), timeout=10))
    expect(replies == [], f"replies {replies}")


@case("client_stream")
def _():
    requests = (pb.StreamRequest(text=f"m{i}") for i in range(20))
    r = client_stream(requests, timeout=10)
    expect(r.index == 20, f"count {r.index}")
    expect(r.text == ",".join(f"m{i}" for i in range(20)), f"text {r.text}")
    r = client_stream(iter(()), timeout=10)
    expect(r.index == 0 and r.text == "", f"empty stream reply {r}")


@case("client_stream_message_over_max_request_memory")
def _():
    # 100 KB of string: within max_body_size (256 KiB), over max_request_memory (64 KiB)
    requests = iter([pb.StreamRequest(text="small"), pb.StreamRequest(text="y" * 100000)])
    try:
        client_stream(requests, timeout=10)
        raise AssertionError("accepted")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"status {e.code()} {e.details()}")
        expect("max_request_memory" in e.details(), f"details {e.details()!r}")
    expect(unary(pb.StreamRequest(text="next"), timeout=10).text == "next", "next call")


@case("bidi")
def _():
    # one request, then its reply, in turn: the server answers each before the next is sent
    outbox = []
    cond = threading.Condition()
    n = 30

    def requests():
        for i in range(n):
            with cond:
                cond.wait_for(lambda: len(outbox) >= i, timeout=10)
            yield pb.StreamRequest(text=f"b{i}", items=[str(i)] * (i % 4))

    for raw in bidi_raw(requests(), timeout=20):
        with cond:
            outbox.append(raw)
            cond.notify_all()
    expect(len(outbox) == n, f"{len(outbox)} replies")
    for i, raw in enumerate(outbox):
        expect(raw == expected_reply(f"b{i}", i, [str(i)] * (i % 4)), f"reply {i}: {raw!r}")


@case("bidi_gzip")
def _():
    # compressed requests; texts starting with "z" ask the handler for compressed replies
    text = "z" + "compressible " * 500
    requests = (pb.StreamRequest(text=text, items=[str(i)]) for i in range(10))
    replies = list(bidi_raw(requests, compression=grpc.Compression.Gzip, timeout=10))
    expect(len(replies) == 10, f"{len(replies)} replies")
    for i, raw in enumerate(replies):
        expect(raw == expected_reply(text, i, [str(i)]), f"reply {i}")


@case("cancel_mid_stream")
def _():
    call = push(pb.StreamRequest(text="c", count=-1, delay_ms=5), timeout=30)
    for _ in range(3):
        next(call)
    expect(in_flight("Push") == 1, "the handler is not running")
    call.cancel()
    expect(wait_in_flight("Push", 0), "the handler did not end after RST_STREAM")
    expect(unary(pb.StreamRequest(text="after"), timeout=10).text == "after", "call after cancel")


@case("deadline")
def _():
    start = time.monotonic()
    got = 0
    try:
        for _ in push(pb.StreamRequest(text="d", count=-1, delay_ms=10), timeout=0.5):
            got += 1
        raise AssertionError("the stream ended without an error")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, f"status {e.code()}")
    expect(got > 0, "no message before the deadline")
    expect(time.monotonic() - start < 3, "the deadline did not end the stream")
    expect(wait_in_flight("Push", 0), "the handler did not end at its deadline")


@case("client_stops_reading")
def _():
    # 64 KiB replies as fast as the server may send; the client reads one, then nothing for a while
    call = push(pb.StreamRequest(text="r", count=-1, bytes=65536), timeout=30)
    next(call)
    # What the server holds for it once the client's windows are full: the stream's
    # max_buffered_bytes (256 KiB, grpc_test.cc) and the message that crossed it, in whole pages;
    # nothing else on this idle server. It stays there.
    deadline = time.monotonic() + 10
    while metric("arenarpc_server_unwritten_held_bytes") < 200 << 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    held = metric("arenarpc_server_unwritten_held_bytes")
    print(f"STALLED_HELD {held:.0f}", flush=True)
    expect(200 << 10 <= held <= 448 << 10, f"held {held} bytes for the stalled stream")
    # the connection and the server still serve other calls meanwhile
    other = grpc.insecure_channel(target)
    good = other.unary_unary(prefix + "Unary", request_serializer=ser,
                             response_deserializer=pb.StreamReply.FromString)
    for i in range(20):
        expect(good(pb.StreamRequest(text=f"g{i}"), timeout=10).text == f"g{i}", "good client")
    other.close()
    expect(unary(pb.StreamRequest(text="same"), timeout=10).text == "same", "same connection")
    got = sum(1 for _ in zip(range(50), call))  # it resumes
    expect(got == 50, f"resumed with {got} replies")
    call.cancel()
    expect(wait_in_flight("Push", 0), "the handler did not end")
    print("STALLED_PUSH_DONE", flush=True)


@case("client_stream_flood")
def _():
    # The server reads nothing for 0.5 s: the client's generator is held back by flow control.
    yielded = []
    payload = "x" * 16384

    def requests():
        for i in range(400):
            yielded.append(time.monotonic())
            yield pb.StreamRequest(text=payload, delay_ms=500 if i == 0 else 0)

    start = time.monotonic()
    r = client_stream(requests(), timeout=30)
    expect(r.index == 400, f"count {r.index}")
    early = sum(1 for t in yielded if t < start + 0.4)
    print(f"FLOOD_EARLY {early}", flush=True)
    expect(early < 64, f"{early} messages of 16 KiB were taken while the server read none")


@case("concurrent_streams_one_connection")
def _():
    n = 40

    def one(i):
        return [r.index for r in server_stream(pb.StreamRequest(text=f"c{i}", count=5, delay_ms=20),
                                               timeout=30)]

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, range(n)))
    elapsed = time.monotonic() - start
    expect(all(r == [0, 1, 2, 3, 4] for r in results), f"results {results}")
    expect(elapsed < n * 0.1 / 2, f"{n} streams of 100 ms took {elapsed:.2f} s: not concurrent")


@case("stop_with_a_stream_open")
def _():
    # The test's server stops (GOAWAY) once this stream is open: the stream goes on until the
    # server's stop_deadline_ms, then its connection closes.
    got, code = 0, None
    start = time.monotonic()
    try:
        for _ in push(pb.StreamRequest(text="stop", count=-1, delay_ms=10), timeout=30):
            got += 1
    except grpc.RpcError as e:
        code = e.code()
    print(f"STOP_STREAM {code} {got} {time.monotonic() - start:.2f}", flush=True)
    expect(code == grpc.StatusCode.UNAVAILABLE, f"the stream ended with {code}")
    expect(got > 10, f"{got} messages")


channel.close()
finish()
