// gRPC server reflection (grpc.reflection.v1 and v1alpha) called by Python grpcio with messages
// built from grpc-proto's .proto files (grpc_reflection_python_client.py): list the services,
// fetch the files of a service and their imports (each import once per stream), build a call from
// the fetched descriptors alone and make it; NOT_FOUND and INVALID_ARGUMENT as error responses for
// unknown, huge and empty requests with the stream going on; symbols linked into the server but
// not declared by its services' files stay hidden. Reflection follows the built-in pages' policy
// (main_port_pages, internal_port, has_builtin_services, auth); health does not need credentials.
// The process also links gRPC's own reflection library (classes generated from
// src/proto/grpc/reflection/v1alpha/reflection.proto in protobuf's generated pool) and starts:
// arenarpc's built-in services keep their descriptors in a pool of their own.
#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include "arenarpc/authenticator.h"
#include "grpc_builtin_fixture.h"

namespace arenarpc::e2e {
namespace {

class GrpcReflectionTest : public GrpcBuiltinTest {};

TEST_P(GrpcReflectionTest, PythonGrpcioListsFetchesAndCalls) {
  StartStampServer();
  const press::ShellOutput run = press::RunShell(PythonClient(port_, "reflection"));
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* name :
       {"list_services_v1", "list_services_v1alpha", "dynamic_call_from_fetched_descriptors",
        "imports_once_per_stream", "builtin_services_describe_themselves",
        "errors_as_responses_and_the_stream_goes_on", "all_extension_numbers_of_type",
        "health_check", "health_watch_unknown_service"}) {
    EXPECT_NE(std::string::npos, run.out.find(std::string("OK ") + name + "\n"))
        << name << "\n" << run.out;
  }
  // The built-in services are not the application's methods.
  for (const std::string& method : server_->ListMethods()) {
    EXPECT_EQ(0u, method.rfind("arenarpc.e2e.", 0)) << method;
  }
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcReflectionTest, ::testing::ValuesIn(kAllModes), ModeName);

// Accepts the credential "token-alice".
class OneTokenAuthenticator final : public Authenticator {
 public:
  int GenerateCredential(std::string* auth_str) const override {
    *auth_str = "token-alice";
    return 0;
  }
  int VerifyCredential(const std::string& auth_str, std::string_view /*client_addr*/,
                       AuthContext* out_ctx) const override {
    if (auth_str != "token-alice") return -1;
    out_ctx->set_user("alice");
    return 0;
  }
};

class GrpcReflectionPolicyTest : public GrpcBuiltinTest {
 protected:
  // The probe's output: "REFLECTION ...", "CHECK ...", "WATCH ..." lines.
  std::string Probe(const ServerOptions& options, const std::string& authorization = "") {
    StartStampServer(options);
    const press::ShellOutput run =
        press::RunShell(PythonClient(port_, "probe " + authorization));
    EXPECT_EQ(0, run.exit_code) << run.out;
    server_.reset();
    return run.out;
  }
};

TEST_P(GrpcReflectionPolicyTest, ReflectionIsServedWhereThePagesAre) {
  const std::string all = Probe({});
  EXPECT_NE(std::string::npos, all.find("REFLECTION OK arenarpc.e2e.TestService,")) << all;
  EXPECT_NE(std::string::npos, all.find("CHECK SERVING\nWATCH SERVING\n")) << all;

  struct Off {
    const char* what;
    ServerOptions options;
  };
  std::vector<Off> off(4);
  off[0].what = "main_port_pages=kHealth";
  off[0].options.main_port_pages = MainPortPages::kHealth;
  off[1].what = "main_port_pages=kNone";
  off[1].options.main_port_pages = MainPortPages::kNone;
  off[2].what = "internal_port (pages moved there; it speaks HTTP/1.1 only)";
  off[2].options.internal_port = 0;
  off[3].what = "has_builtin_services=false";
  off[3].options.has_builtin_services = false;
  for (const Off& each : off) {
    const std::string out = Probe(each.options);
    // As for a service the server does not have; health stays (as gRPC servers answer it).
    EXPECT_NE(std::string::npos, out.find("REFLECTION UNIMPLEMENTED\n")) << each.what << out;
    EXPECT_NE(std::string::npos, out.find("CHECK SERVING\nWATCH SERVING\n")) << each.what << out;
  }
}

TEST_P(GrpcReflectionPolicyTest, ReflectionNeedsTheCredentialHealthDoesNot) {
  OneTokenAuthenticator auth;
  ServerOptions options;
  options.auth = &auth;
  const std::string without = Probe(options);
  EXPECT_NE(std::string::npos, without.find("REFLECTION UNAUTHENTICATED\n")) << without;
  EXPECT_NE(std::string::npos, without.find("CHECK SERVING\nWATCH SERVING\n")) << without;
  const std::string with = Probe(options, "token-alice");
  EXPECT_NE(std::string::npos, with.find("REFLECTION OK ")) << with;
}

INSTANTIATE_TEST_SUITE_P(Heap, GrpcReflectionPolicyTest, ::testing::Values("heap"), ModeName);

TEST(GrpcReflectionLinkTest, GrpcsOwnReflectionClassesLiveBesideArenarpcs) {
  // Links libgrpc++_reflection: its generated v1alpha classes are in protobuf's generated pool.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  EXPECT_NE(nullptr, google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
                         "grpc.reflection.v1alpha.ServerReflectionRequest"));
}

}  // namespace
}  // namespace arenarpc::e2e
