"""Python grpcio against an arenarpc server's reflection and health services
(tests/e2e/grpc_reflection_test.cc runs it).

Usage: grpc_reflection_python_client.py PORT DESCRIPTOR_SET reflection
       grpc_reflection_python_client.py PORT DESCRIPTOR_SET watch SERVICE
DESCRIPTOR_SET: `protoc --include_imports --descriptor_set_out` of grpc-proto's
grpc/reflection/v1/reflection.proto, grpc/reflection/v1alpha/reflection.proto and
grpc/health/v1/health.proto (the messages are built from it at run time: the module names
grpc.reflection.* would clash with the grpc package).
"reflection" prints "OK <case>" / "FAIL <case>: <why>" per case and exits 1 if any failed.
"watch" prints each status Watch receives ("STATUS SERVING", ...) as it arrives, then
"END <status code>" when the stream ends.
       grpc_reflection_python_client.py PORT DESCRIPTOR_SET probe [AUTHORIZATION]
prints "REFLECTION OK <services>" or "REFLECTION <status code>" (list_services, with the
authorization metadata when given), then "CHECK ..." and "WATCH ..." for the service "" (no
credentials): the first status, or the status code of the failure.
       grpc_reflection_python_client.py PORT DESCRIPTOR_SET watches N
opens N Watch calls on one connection, all at once; prints "WATCH <i> <first status or code>".
"""
import sys

port, set_path, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
import grpc  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from py_cases import case, expect, expect_status, finish  # noqa: E402

file_set = descriptor_pb2.FileDescriptorSet.FromString(open(set_path, "rb").read())
messages = message_factory.GetMessages(list(file_set.file))
target = f"127.0.0.1:{port}"
channel = grpc.insecure_channel(target)

HealthCheckRequest = messages["grpc.health.v1.HealthCheckRequest"]
HealthCheckResponse = messages["grpc.health.v1.HealthCheckResponse"]
STATUS_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

if mode == "watch":
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=HealthCheckRequest.SerializeToString,
                                 response_deserializer=HealthCheckResponse.FromString)
    try:
        for reply in watch(HealthCheckRequest(service=sys.argv[4]), timeout=60):
            print("STATUS " + STATUS_NAMES.get(reply.status, str(reply.status)), flush=True)
        print("END OK", flush=True)
    except grpc.RpcError as e:
        print(f"END {e.code().name} {e.details()}", flush=True)
    sys.exit(0)

if mode in ("probe", "watches"):
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=HealthCheckRequest.SerializeToString,
                                 response_deserializer=HealthCheckResponse.FromString)

    def first_status(replies):
        try:
            return STATUS_NAMES.get(next(replies).status, "?")
        except grpc.RpcError as e:
            return e.code().name

    if mode == "watches":
        calls = [watch(HealthCheckRequest(), timeout=30) for _ in range(int(sys.argv[4]))]
        for i, replies in enumerate(calls):
            print(f"WATCH {i} {first_status(replies)}", flush=True)
        for replies in calls:
            replies.cancel()
        sys.exit(0)
    Request = messages["grpc.reflection.v1.ServerReflectionRequest"]
    Response = messages["grpc.reflection.v1.ServerReflectionResponse"]
    info = channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                                 request_serializer=Request.SerializeToString,
                                 response_deserializer=Response.FromString)
    metadata = (("authorization", sys.argv[4]),) if len(sys.argv) > 4 else None
    try:
        (reply,) = list(info(iter([Request(list_services="")]), metadata=metadata, timeout=10))
        print("REFLECTION OK " + ",".join(s.name for s in reply.list_services_response.service))
    except grpc.RpcError as e:
        print(f"REFLECTION {e.code().name}")
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=HealthCheckRequest.SerializeToString,
                                response_deserializer=HealthCheckResponse.FromString)
    try:
        print("CHECK " + STATUS_NAMES[check(HealthCheckRequest(), timeout=10).status])
    except grpc.RpcError as e:
        print(f"CHECK {e.code().name}")
    replies = watch(HealthCheckRequest(), timeout=10)
    print("WATCH " + first_status(replies), flush=True)
    replies.cancel()
    sys.exit(0)


def reflection(version):
    Request = messages[f"grpc.reflection.{version}.ServerReflectionRequest"]
    Response = messages[f"grpc.reflection.{version}.ServerReflectionResponse"]
    info = channel.stream_stream(f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                                 request_serializer=Request.SerializeToString,
                                 response_deserializer=Response.FromString)
    return Request, info


def ask(version, *requests):
    """One stream: the requests in order, their responses."""
    Request, info = reflection(version)
    replies = list(info(iter([Request(**r) for r in requests]), timeout=30))
    expect(len(replies) == len(requests), f"{len(replies)} replies to {len(requests)} requests")
    return replies


def file_names(reply):
    expect(reply.WhichOneof("message_response") == "file_descriptor_response",
           f"not files: {reply}")
    return [descriptor_pb2.FileDescriptorProto.FromString(b).name
            for b in reply.file_descriptor_response.file_descriptor_proto]


def error_of(reply):
    expect(reply.WhichOneof("message_response") == "error_response", f"not an error: {reply}")
    return reply.error_response.error_code, reply.error_response.error_message


SERVICES = ["arenarpc.e2e.TestService", "arenarpc.e2e.reflected.StampService",
            "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"]
STAMP_FILES = ["grpc_reflection_test.proto", "google/protobuf/timestamp.proto", "e2e_test.proto"]


@case("list_services_v1")
def _():
    (reply,) = ask("v1", {"host": "h1", "list_services": "*"})
    names = [s.name for s in reply.list_services_response.service]
    expect(names == SERVICES, f"services {names}")
    expect(reply.valid_host == "h1", f"valid_host {reply.valid_host!r}")
    expect(reply.original_request.list_services == "*", f"original {reply.original_request}")


@case("list_services_v1alpha")
def _():
    (reply,) = ask("v1alpha", {"list_services": ""})
    names = [s.name for s in reply.list_services_response.service]
    expect(names == SERVICES, f"services {names}")


@case("dynamic_call_from_fetched_descriptors")
def _():
    (reply,) = ask("v1", {"file_containing_symbol": "arenarpc.e2e.reflected.StampService"})
    protos = [descriptor_pb2.FileDescriptorProto.FromString(b)
              for b in reply.file_descriptor_response.file_descriptor_proto]
    expect([p.name for p in protos] == STAMP_FILES, f"files {[p.name for p in protos]}")
    pool = descriptor_pool.DescriptorPool()
    for p in reversed(protos):  # imports before the files that import them
        pool.Add(p)
    service = pool.FindServiceByName("arenarpc.e2e.reflected.StampService")
    method = service.FindMethodByName("Stamp")
    factory = message_factory.MessageFactory(pool)
    StampRequest = factory.GetPrototype(method.input_type)
    Reply = factory.GetPrototype(method.output_type)
    call = channel.unary_unary(f"/{service.full_name}/{method.name}",
                               request_serializer=StampRequest.SerializeToString,
                               response_deserializer=Reply.FromString)
    request = StampRequest(message="dyn")
    request.at.seconds = 42
    out = call(request, timeout=10)
    expect(out.message == "dyn@42", f"reply {out}")


@case("imports_once_per_stream")
def _():
    first, again, other, by_name = ask(
        "v1",
        {"file_containing_symbol": "arenarpc.e2e.reflected.StampRequest"},
        {"file_containing_symbol": "arenarpc.e2e.reflected.StampService.Stamp"},
        {"file_containing_symbol": "arenarpc.e2e.TestService"},
        {"file_by_filename": "google/protobuf/timestamp.proto"})
    expect(file_names(first) == STAMP_FILES, f"first {file_names(first)}")
    # The file asked for goes out again; its imports were sent on this stream already.
    expect(file_names(again) == ["grpc_reflection_test.proto"], f"again {file_names(again)}")
    expect(file_names(other) == ["e2e_test.proto"], f"other {file_names(other)}")
    expect(file_names(by_name) == ["google/protobuf/timestamp.proto"], f"by name {file_names(by_name)}")


@case("builtin_services_describe_themselves")
def _():
    health, v1alpha = ask("v1alpha", {"file_containing_symbol": "grpc.health.v1.Health"},
                          {"file_by_filename": "grpc/reflection/v1alpha/reflection.proto"})
    expect(file_names(health) == ["grpc/health/v1/health.proto"], f"{file_names(health)}")
    expect(file_names(v1alpha) == ["grpc/reflection/v1alpha/reflection.proto"],
           f"{file_names(v1alpha)}")


@case("errors_as_responses_and_the_stream_goes_on")
def _():
    huge = "x" * (512 << 10)
    replies = ask(
        "v1",
        {"file_containing_symbol": "arenarpc.e2e.NoSuchThing"},
        {"file_containing_symbol": huge},
        {"file_by_filename": "no/such.proto"},
        {"all_extension_numbers_of_type": "arenarpc.e2e.NoSuchType"},
        {"file_containing_extension": {"containing_type": "arenarpc.e2e.NoSuchType",
                                       "extension_number": 100}},
        {"file_containing_extension": {"containing_type": "arenarpc.e2e.TestRequest",
                                       "extension_number": 100}},
        # linked into the server but not declared by a registered service's files
        {"file_containing_symbol": "google.protobuf.Duration"},
        {"host": "only-a-host"},
        {"list_services": ""})
    errors = [error_of(r) for r in replies[:-1]]
    expect(errors[0] == (5, "Symbol not found."), f"unknown symbol {errors[0]}")
    expect(errors[1] == (5, "Symbol not found."), f"huge symbol {errors[1]}")
    expect(errors[2] == (5, "File not found."), f"unknown file {errors[2]}")
    expect(errors[3] == (5, "Type not found."), f"extension numbers {errors[3]}")
    expect(errors[4] == (5, "Type not found."), f"extension type {errors[4]}")
    expect(errors[5] == (5, "Extension not found."), f"extension {errors[5]}")
    expect(errors[6] == (5, "Symbol not found."), f"unregistered file {errors[6]}")
    expect(errors[7][0] == 3, f"empty request {errors[7]}")
    expect(len(replies[-1].list_services_response.service) == len(SERVICES), "list after errors")


@case("all_extension_numbers_of_type")
def _():
    (reply,) = ask("v1", {"all_extension_numbers_of_type": "arenarpc.e2e.TestRequest"})
    numbers = reply.all_extension_numbers_response
    expect(reply.WhichOneof("message_response") == "all_extension_numbers_response", f"{reply}")
    expect(numbers.base_type_name == "arenarpc.e2e.TestRequest", f"{numbers}")
    expect(list(numbers.extension_number) == [], f"{numbers}")


@case("health_check")
def _():
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=HealthCheckRequest.SerializeToString,
                                response_deserializer=HealthCheckResponse.FromString)
    expect(check(HealthCheckRequest(), timeout=10).status == 1, "overall SERVING")
    expect(check(HealthCheckRequest(service="arenarpc.e2e.reflected.StampService"),
                 timeout=10).status == 1, "service SERVING")
    expect_status(lambda: check(HealthCheckRequest(service="no.Such"), timeout=10),
                  grpc.StatusCode.NOT_FOUND, "unknown service")


@case("health_watch_unknown_service")
def _():
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=HealthCheckRequest.SerializeToString,
                                 response_deserializer=HealthCheckResponse.FromString)
    replies = watch(HealthCheckRequest(service="no.Such"), timeout=30)
    first = next(replies)
    expect(first.status == 3, f"first {first}")  # SERVICE_UNKNOWN, and the stream stays open
    replies.cancel()


channel.close()
finish()
