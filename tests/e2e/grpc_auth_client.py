"""Python grpcio against a server with an Authenticator and interceptors (tests/e2e/auth_test.cc).

Usage: grpc_auth_client.py PORT GEN_DIR
The server accepts `authorization: token-alice|token-bob`; its interceptors A and B refuse
messages "refuse-A" / "refuse-B" with EPERM. Prints "OK <case>" or "FAIL <case>: <why>" per case;
exits 1 if any failed.
"""
import sys

port, gen_dir = int(sys.argv[1]), sys.argv[2]
sys.path.insert(0, gen_dir)
import grpc  # noqa: E402
import e2e_test_pb2 as pb  # noqa: E402
from py_cases import case, expect, expect_status, finish  # noqa: E402


channel = grpc.insecure_channel(f"127.0.0.1:{port}")
echo = channel.unary_unary("/arenarpc.e2e.TestService/Echo",
                           request_serializer=pb.TestRequest.SerializeToString,
                           response_deserializer=pb.TestResponse.FromString)


def call(message, token=None):
    metadata = (("authorization", token),) if token else None
    return echo(pb.TestRequest(message=message), metadata=metadata, timeout=10)


@case("authorized")
def _():
    r = call("hi", "token-alice")
    expect(r.message == "hi" and r.auth_user == "alice", f"reply {r}")


@case("unauthenticated")
def _():
    e = expect_status(lambda: call("hi"), grpc.StatusCode.UNAUTHENTICATED, "no metadata")
    expect("Fail to authenticate" in e.details(), f"details {e.details()!r}")
    expect_status(lambda: call("hi", "token-mallory"), grpc.StatusCode.UNAUTHENTICATED, "bad token")


@case("per_request")
def _():
    # One connection: each request is verified on its own.
    expect(call("1", "token-bob").auth_user == "bob", "bob")
    expect_status(lambda: call("2"), grpc.StatusCode.UNAUTHENTICATED, "then none")
    expect(call("3", "token-alice").auth_user == "alice", "then alice")


@case("two_credentials")
def _():
    # Two authorization values are refused whichever comes first, a valid one included.
    for tokens in (("token-alice", "token-mallory"), ("token-mallory", "token-alice")):
        metadata = tuple(("authorization", t) for t in tokens)
        expect_status(lambda: echo(pb.TestRequest(message="x"), metadata=metadata, timeout=10),
                      grpc.StatusCode.UNAUTHENTICATED, f"tokens {tokens}")


@case("interceptor_refuses")
def _():
    e = expect_status(lambda: call("refuse-B", "token-alice"), grpc.StatusCode.PERMISSION_DENIED,
                      "refuse-B")
    expect("B says no" in e.details(), f"details {e.details()!r}")
    expect(call("after", "token-alice").message == "after", "call after the refused one")


channel.close()
finish()
