// Writes the seed corpora for the fuzz targets: the spec's example frames (§10) and payloads in
// every codec, and requests of the two schemas fuzz_shape reuses.
// Usage: fuzz_make_seeds <frame_corpus_dir> <payload_corpus_dir> [<shape_corpus_dir>]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "../tests/protocol/spec_frames.h"
#include "echo/payload_generator.h"
#include "memory_test.pb.h"
#include "protocol/checksum.h"
#include "protocol/compression.h"
#include "protocol/frame_codec.h"
#include "protocol/stream_frame.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;
using namespace arenarpc::testing;

void Write(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

BufferChain Chain(const std::string& s) {
  BufferChain c;
  c.Append(s);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s <frame_corpus_dir> <payload_corpus_dir> [<shape_corpus_dir>]\n",
                 argv[0]);
    return 2;
  }
  if (argc == 4) {
    const std::filesystem::path shapes = argv[3];
    std::filesystem::create_directories(shapes);
    arenarpc::example::PayloadGenerator gen(2, 7);
    for (int i = 0; i < 6; ++i) {
      arenarpc::example::EchoRequest r;
      gen.Fill(&r);
      r.add_message("top");
      Write(shapes, "echo_" + std::to_string(i), r.SerializeAsString());
    }
    arenarpc::memtest::Root root;
    root.mutable_mid()->add_leaves()->add_value("kept");
    root.add_mids()->mutable_leaf()->set_s("nested");
    root.add_mids()->add_leaves()->add_value(std::string(40, 'x'));
    root.mutable_one_leaf()->add_value("oneof");
    (*root.mutable_counts())["k"] = 1;
    Write(shapes, "root", root.SerializeAsString());
  }
  const std::filesystem::path frames = argv[1], payloads = argv[2];
  std::filesystem::create_directories(frames);
  std::filesystem::create_directories(payloads);

  // Frame seeds: chunking byte + connection bytes.
  Write(frames, "request_full", "\x07" + SpecRequestFull());
  Write(frames, "request_minimal", "\x01" + SpecRequestMinimal());
  Write(frames, "request_attachment", "\x3f" + SpecRequestLogIdAttachment());
  Write(frames, "reply_full", "\x10" + SpecReplyFull() + SpecReplyMinimal());
  Write(frames, "error_reply", "\x05" + SpecErrorReply());
  Write(frames, "pipelined",
        "\x20" + SpecRequestFull() + SpecRequestLogIdAttachment() + SpecRequestMinimal());
  // A call that offers a stream, then the stream's DATA, FEEDBACK and CLOSE frames.
  {
    arenarpc::net::BufferChain wire;
    const auto stream_frame = [&](FrameType type, std::string data) {
      StreamFrameMeta meta;
      meta.set_stream_id(7);
      meta.set_source_stream_id(9);
      meta.set_frame_type(type);
      if (type == FRAME_TYPE_FEEDBACK) meta.mutable_feedback()->set_consumed_size(5);
      arenarpc::net::BufferChain bytes;
      bytes.Append(data);
      EncodeStreamFrame(meta, std::move(bytes), &wire);
    };
    stream_frame(FRAME_TYPE_DATA, "hello");
    stream_frame(FRAME_TYPE_FEEDBACK, "");
    stream_frame(FRAME_TYPE_CLOSE, "");
    Write(frames, "stream_frames", "\x03" + SpecRequestFull() + wire.ToString());
  }

  // A request whose payload is a compressed, checksummed RpcMeta, in every codec.
  RpcMeta message;
  message.mutable_request()->set_service_name("example.EchoService");
  message.mutable_request()->set_method_name("Echo");
  (*message.mutable_user_fields())["key"] = "value";
  message.set_correlation_id(-1);
  for (int type = 0; type <= 3; ++type) {
    BufferChain payload;
    std::string error;
    if (!SerializePayload(message, type, &payload, &error)) {
      std::fprintf(stderr, "seed: %s\n", error.c_str());
      return 1;
    }
    const std::string name = CompressTypeName(type);
    Write(payloads, name, std::string(1, static_cast<char>(type)) + "\x03" + payload.ToString());
    Write(payloads, name + "_pieces",
          std::string(1, static_cast<char>(type)) + "\x0c" + payload.ToString());

    RequestMetaFields call;
    call.service_name = "example.EchoService";
    call.method_name = "Echo";
    call.correlation_id = 4294967298LL;
    call.log_id = 5;
    const BufferChain attachment = Chain("AB");
    PayloadFields fields{type, attachment.size(), 1, true};
    RpcMeta meta;
    if (!BuildRequestMeta(call, fields, payload, attachment, &meta, &error)) return 1;
    BufferChain wire;
    EncodeFrame(meta, std::move(payload), Chain("AB"), &wire);
    Write(frames, "request_" + name, "\x09" + wire.ToString());
  }
  return 0;
}
