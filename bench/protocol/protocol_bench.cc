// Costs of the protocol layer per call, on the workload's EchoRequest (docs/benchmarks.md).
//   DecodeMerge/<scale>/chain   FrameDecoder + MergePayload straight from the receive blocks
//   DecodeMerge/<scale>/flat    the same, but the payload is first copied into one std::string
//   Encode/<scale>/chain        SerializePayload into pages + BuildResponseMeta + EncodeFrame
//   Encode/<scale>/flat         SerializeToString, then the string appended to the chain
//   Decompress/<codec>          Decompress of the scale-8 payload
#include <benchmark/benchmark.h>

#include <string>

#include "echo/payload_generator.h"
#include "protocol/compression.h"
#include "protocol/frame_codec.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;
using arenarpc::example::EchoRequest;

EchoRequest MakeRequest(int scale) {
  EchoRequest request;
  arenarpc::example::PayloadGenerator(scale).Fill(&request);
  return request;
}

// One request frame, as a client would send it.
std::string RequestFrame(const EchoRequest& request, int compress_type = 0) {
  BufferChain payload, wire;
  std::string error;
  SerializePayload(request, compress_type, &payload, &error, "request");
  RequestMetaFields call;
  call.service_name = "arenarpc.example.EchoService";
  call.method_name = "Echo";
  call.correlation_id = 4294967298LL;
  RpcMeta meta;
  BuildRequestMeta(call, {compress_type}, payload, {}, &meta, &error);
  EncodeFrame(meta, std::move(payload), {}, &wire);
  return wire.ToString();
}

// Reads arrive in 8 KiB pieces, like socket reads into I/O pages.
void Receive(const std::string& bytes, BufferChain* in) {
  for (size_t pos = 0; pos < bytes.size(); pos += 8000) {
    in->Append(std::string_view(bytes).substr(pos, 8000));
  }
}

void DecodeMerge(benchmark::State& state, bool flatten) {
  const std::string wire = RequestFrame(MakeRequest(static_cast<int>(state.range(0))));
  FrameDecoder decoder;
  Frame frame;
  EchoRequest request;
  std::string detail;
  for (auto _ : state) {
    BufferChain in;
    Receive(wire, &in);
    if (decoder.Next(in, &frame) != DecodeStatus::kFrame) state.SkipWithError("decode");
    request.Clear();
    if (flatten) {
      if (!request.ParseFromString(frame.payload.ToString())) state.SkipWithError("parse");
    } else if (!MergePayload(PayloadEncoding::Of(frame.meta), frame.payload, frame.attachment,
                             &request, &detail)) {
      state.SkipWithError("merge");
    }
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire.size()));
  state.counters["frame_bytes"] = static_cast<double>(wire.size());
}

void Encode(benchmark::State& state, bool flatten) {
  const EchoRequest response = MakeRequest(static_cast<int>(state.range(0)));
  std::string error, flat;
  size_t bytes = 0;
  for (auto _ : state) {
    BufferChain payload, out;
    if (flatten) {
      response.SerializeToString(&flat);
      payload.Append(flat);
    } else {
      SerializePayload(response, 0, &payload, &error);
    }
    RpcMeta meta;
    BuildResponseMeta(4294967298LL, {}, payload, {}, nullptr, &meta, &error);
    EncodeFrame(meta, std::move(payload), {}, &out);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void DecompressCodec(benchmark::State& state) {
  const int type = static_cast<int>(state.range(0));
  BufferChain plain, packed;
  plain.Append(MakeRequest(8).SerializeAsString());
  std::string error;
  Compress(type, plain, &packed, &error);
  for (auto _ : state) {
    BufferChain out;
    if (!Decompress(type, packed, &out, &error)) state.SkipWithError("decompress");
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * plain.size()));
  state.counters["ratio"] = static_cast<double>(plain.size()) / static_cast<double>(packed.size());
  state.SetLabel(CompressTypeName(type));
}

BENCHMARK_CAPTURE(DecodeMerge, chain, false)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK_CAPTURE(DecodeMerge, flat, true)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK_CAPTURE(Encode, chain, false)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK_CAPTURE(Encode, flat, true)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK(DecompressCodec)->DenseRange(1, 3);

}  // namespace

BENCHMARK_MAIN();
