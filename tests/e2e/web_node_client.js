// Node's @connectrpc/connect-node (npm) against an arenarpc server, through its gRPC-web and
// Connect transports (Connect with JSON and with binary messages): PORT MODULES_DIR HTTP_VERSION.
// Message types are built at run time (protobuf-es v1), no code generation. Each case prints
// "OK <transport> <name>" or "FAIL <transport> <name>: <why>"; the exit status is 1 if any failed.
'use strict';
const [port, modulesDir, httpVersion, only] = process.argv.slice(2);
const path = require('path');
const {proto2, proto3, ScalarType, MethodKind, MethodIdempotency} = require(path.join(modulesDir, '@bufbuild/protobuf'));
const {createPromiseClient, ConnectError, Code} =
    require(path.join(modulesDir, '@connectrpc/connect'));
const {createGrpcWebTransport, createConnectTransport} =
    require(path.join(modulesDir, '@connectrpc/connect-node'));

// tests/e2e/e2e_test.proto and grpc_stream_test.proto, the fields these cases use.
const TestRequest = proto2.makeMessageType('arenarpc.e2e.TestRequest', [
  {no: 1, name: 'message', kind: 'scalar', T: ScalarType.STRING, req: true},
  {no: 2, name: 'items', kind: 'scalar', T: ScalarType.STRING, repeated: true},
  {no: 5, name: 'fail_code', kind: 'scalar', T: ScalarType.INT32, opt: true},
  {no: 6, name: 'fail_text', kind: 'scalar', T: ScalarType.STRING, opt: true},
  {no: 12, name: 'response_bytes', kind: 'scalar', T: ScalarType.INT32, opt: true},
  {no: 16, name: 'status_details', kind: 'scalar', T: ScalarType.BYTES, opt: true},
]);
const TestResponse = proto2.makeMessageType('arenarpc.e2e.TestResponse', [
  {no: 1, name: 'message', kind: 'scalar', T: ScalarType.STRING, req: true},
  {no: 2, name: 'items', kind: 'scalar', T: ScalarType.STRING, repeated: true},
  {no: 3, name: 'log_id', kind: 'scalar', T: ScalarType.INT64, opt: true},
]);
const StreamRequest = proto3.makeMessageType('arenarpc.e2e.StreamRequest', [
  {no: 1, name: 'text', kind: 'scalar', T: ScalarType.STRING},
  {no: 2, name: 'count', kind: 'scalar', T: ScalarType.INT32},
  {no: 6, name: 'fail_code', kind: 'scalar', T: ScalarType.INT32},
]);
const StreamReply = proto3.makeMessageType('arenarpc.e2e.StreamReply', [
  {no: 1, name: 'text', kind: 'scalar', T: ScalarType.STRING},
  {no: 2, name: 'index', kind: 'scalar', T: ScalarType.INT32},
]);
const TestService = {
  typeName: 'arenarpc.e2e.TestService',
  methods: {
    echo: {name: 'Echo', I: TestRequest, O: TestResponse, kind: MethodKind.Unary},
    nope: {name: 'Nope', I: TestRequest, O: TestResponse, kind: MethodKind.Unary},
    // idempotency_level NO_SIDE_EFFECTS: connect-get calls it with GET
    echo2: {name: 'Echo2', I: TestRequest, O: TestResponse, kind: MethodKind.Unary,
            idempotency: MethodIdempotency.NoSideEffects},
  },
};
const StreamService = {
  typeName: 'arenarpc.e2e.StreamService',
  methods: {
    serverStream: {name: 'ServerStream', I: StreamRequest, O: StreamReply,
                   kind: MethodKind.ServerStreaming},
  },
};

const baseUrl = `http://127.0.0.1:${port}`;
const transports = {
  'grpc-web': createGrpcWebTransport({baseUrl, httpVersion}),
  'connect-json': createConnectTransport({baseUrl, httpVersion}),
  'connect-proto': createConnectTransport({baseUrl, httpVersion, useBinaryFormat: true}),
  // Connect's GET for methods without side effects (one case: get_no_side_effects).
  'connect-get': createConnectTransport({baseUrl, httpVersion, useHttpGet: true}),
};

const failures = [];
function expect(condition, what) {
  if (!condition) throw new Error(what);
}
async function run(transport, name, body) {
  try {
    await body();
    console.log(`OK ${transport} ${name}`);
  } catch (e) {
    failures.push(`${transport} ${name}`);
    console.log(`FAIL ${transport} ${name}: ${e && e.stack || e}`);
  }
}
async function expectError(promise, code, text) {
  try {
    await promise;
  } catch (e) {
    const error = ConnectError.from(e);
    expect(error.code === code, `code ${error.code} (${Code[error.code]}), wanted ${code}: ` +
           error.rawMessage);
    expect(error.rawMessage.includes(text), `message '${error.rawMessage}' lacks '${text}'`);
    return error;
  }
  throw new Error('the call succeeded');
}
// A google.rpc.Status{code 7, message "rich", details [Any{RetryInfo{retry_delay 5 s}}]}, encoded
// by hand (no google.rpc types here), and the detail's bytes.
const kRetryInfo = Uint8Array.of(0x0a, 0x02, 0x08, 0x05);
function richStatus() {
  const field = (number, bytes) => [(number << 3) | 2, bytes.length, ...bytes];
  const any = [...field(1, Buffer.from('type.googleapis.com/google.rpc.RetryInfo')),
               ...field(2, kRetryInfo)];
  return Uint8Array.from([0x08, 0x07, ...field(2, Buffer.from('rich')), ...field(3, any)]);
}

(async () => {
  for (const [name, transport] of Object.entries(transports)) {
    if (only && !only.split(',').includes(name)) continue;
    const echo = createPromiseClient(TestService, transport);
    const streams = createPromiseClient(StreamService, transport);
    if (name === 'connect-get') {
      await run(name, 'get_no_side_effects', async () => {
        const reply = await echo.echo2({message: 'by get', items: ['g']});
        expect(reply.message === 'by get' && reply.items.join(',') === 'g',
               `reply ${JSON.stringify(reply)}`);
      });
      continue;
    }
    await run(name, 'unary', async () => {
      const reply = await echo.echo({message: 'hello', items: ['a', 'b']});
      expect(reply.message === 'hello' && reply.items.join(',') === 'a,b',
             `reply ${JSON.stringify(reply)}`);
    });
    await run(name, 'metadata', async () => {
      let headers = null;
      await echo.echo({message: 'm'}, {headers: {'x-user': 'v1'}, onHeader: (h) => { headers = h; }});
      expect(headers && headers.get('x-user') === 'v1-back',
             `response headers ${headers && JSON.stringify([...headers])}`);
      // Which of the server's paths answered: its HTTP/2 session sends grpc-accept-encoding.
      console.log(`INFO ${name} grpc-accept-encoding=${headers.get('grpc-accept-encoding')}`);
    });
    await run(name, 'handler_error', async () => {
      await expectError(echo.echo({message: 'm', failCode: -1, failText: 'oops'}),
                        Code.Internal, 'oops');
    });
    await run(name, 'error_details', async () => {
      const error = await expectError(
          echo.echo({message: 'm', failCode: 1, failText: 'rich', statusDetails: richStatus()}),
          Code.PermissionDenied, 'rich');
      expect(error.details.length === 1, `details ${JSON.stringify(error.details)}`);
      const detail = error.details[0];
      expect(detail.type === 'google.rpc.RetryInfo', `type ${detail.type}`);
      expect(Buffer.from(detail.value).equals(Buffer.from(kRetryInfo)),
             `value ${Buffer.from(detail.value).toString('hex')}`);
    });
    await run(name, 'unimplemented', async () => {
      await expectError(echo.nope({message: 'm'}), Code.Unimplemented,
                        'Method not found: arenarpc.e2e.TestService/Nope');
    });
    await run(name, 'message_of_1_mib', async () => {
      const reply = await echo.echo({message: 'x'.repeat(1 << 20)});
      expect(reply.message.length === 1 << 20, `reply of ${reply.message.length}`);
    });
    await run(name, 'concurrent_calls', async () => {
      const calls = [];
      for (let i = 0; i < 50; ++i) calls.push(echo.echo({message: `c${i}`}));
      const replies = await Promise.all(calls);
      replies.forEach((r, i) => expect(r.message === `c${i}`, `reply ${i}: ${r.message}`));
    });
    await run(name, 'server_stream', async () => {
      let n = 0;
      for await (const reply of streams.serverStream({text: 's', count: 300})) {
        expect(reply.index === n && reply.text === 's', `reply ${n}: ${JSON.stringify(reply)}`);
        ++n;
      }
      expect(n === 300, `${n} replies`);
    });
    await run(name, 'server_stream_error', async () => {
      let n = 0;
      const stream = streams.serverStream({text: 'failing', count: 3, failCode: 1});
      await expectError((async () => { for await (const reply of stream) ++n; })(),
                        Code.PermissionDenied, 'failing');
      expect(n === 3, `${n} replies before the error`);
    });
  }
  process.exit(failures.length === 0 ? 0 : 1);
})();
