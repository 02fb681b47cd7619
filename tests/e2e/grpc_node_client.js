// Node's @grpc/grpc-js against an arenarpc server: PORT PROTO_DIR MODULES_DIR.
// Each case prints "OK <name>" or "FAIL <name>: <why>"; the exit status is 1 if any failed.
'use strict';
const [port, protoDir, modulesDir] = process.argv.slice(2);
const path = require('path');
const grpc = require(path.join(modulesDir, '@grpc/grpc-js'));
const loader = require(path.join(modulesDir, '@grpc/proto-loader'));

const definition = loader.loadSync(
    ['e2e_test.proto', 'grpc_stream_test.proto'],
    {includeDirs: [protoDir], keepCase: true, longs: String, defaults: true});
const e2e = grpc.loadPackageDefinition(definition).arenarpc.e2e;
const target = `127.0.0.1:${port}`;
const big = 64 << 20;
const options = {'grpc.max_receive_message_length': big, 'grpc.max_send_message_length': big};
const echo = new e2e.TestService(target, grpc.credentials.createInsecure(), options);
const gzipped = new e2e.TestService(target, grpc.credentials.createInsecure(),
                                    {...options, 'grpc.default_compression_algorithm': 2});
const streams = new e2e.StreamService(target, grpc.credentials.createInsecure(), options);

const failures = [];
function expect(condition, what) {
  if (!condition) throw new Error(what);
}
function deadline(ms) {
  return new Date(Date.now() + ms);
}
function unary(client, method, request, metadata = new grpc.Metadata(), ms = 10000) {
  return new Promise((resolve) => {
    let initial = null;
    const call = client[method](request, metadata, {deadline: deadline(ms)},
                                (error, reply) => resolve({error, reply, initial}));
    call.on('metadata', (m) => { initial = m; });
  });
}
async function run(name, body) {
  try {
    await body();
    console.log(`OK ${name}`);
  } catch (e) {
    failures.push(name);
    console.log(`FAIL ${name}: ${e.message}`);
  }
}

(async () => {
  await run('unary', async () => {
    const {error, reply} = await unary(echo, 'Echo', {message: 'hello', items: ['a', 'b']});
    expect(!error, `error ${error}`);
    expect(reply.message === 'hello' && reply.items.join(',') === 'a,b',
           `reply ${JSON.stringify(reply)}`);
  });
  await run('metadata', async () => {
    const metadata = new grpc.Metadata();
    metadata.set('x-user', 'v1');
    const {error, initial} = await unary(echo, 'Echo', {message: 'm'}, metadata);
    expect(!error, `error ${error}`);
    expect(initial && initial.get('x-user')[0] === 'v1-back',
           `initial metadata ${initial && JSON.stringify(initial.getMap())}`);
  });
  await run('handler_error', async () => {
    const {error} = await unary(echo, 'Echo', {message: 'f', fail_code: 2004,
                                              fail_text: 'busy 100% now'});
    expect(error && error.code === grpc.status.UNAVAILABLE, `status ${error && error.code}`);
    expect(error.details.includes('busy 100% now'), `details ${error.details}`);
  });
  await run('unimplemented', async () => {
    const client = new grpc.Client(target, grpc.credentials.createInsecure());
    const error = await new Promise((resolve) => {
      client.makeUnaryRequest('/arenarpc.e2e.TestService/NoSuchMethod', (x) => x, (x) => x,
                              Buffer.from([0x0a, 0x01, 0x6d]), (e) => resolve(e));
    });
    expect(error && error.code === grpc.status.UNIMPLEMENTED, `status ${error && error.code}`);
    expect(error.details.includes('NoSuchMethod'), `details ${error.details}`);
    client.close();
  });
  await run('deadline_exceeded', async () => {
    const {error} = await unary(echo, 'Echo', {message: 'slow', delay_ms: 3000},
                                new grpc.Metadata(), 200);
    expect(error && error.code === grpc.status.DEADLINE_EXCEEDED, `status ${error && error.code}`);
  });
  await run('gzip_request', async () => {
    const {error, reply} = await unary(gzipped, 'Echo', {message: 'z'.repeat(100000)});
    expect(!error, `error ${error}`);
    expect(reply.message.length === 100000, `reply of ${reply.message.length}`);
  });
  await run('message_of_8_mib', async () => {
    const {error, reply} = await unary(echo, 'Echo', {message: 'x'.repeat(8 << 20)});
    expect(!error, `error ${error}`);
    expect(reply.message.length === 8 << 20, `reply of ${reply.message.length}`);
  });
  await run('server_stream', async () => {
    const indexes = await new Promise((resolve, reject) => {
      const seen = [];
      const call = streams.ServerStream({text: 's', count: 300}, {deadline: deadline(10000)});
      call.on('data', (reply) => seen.push(reply.index));
      call.on('error', reject);
      call.on('end', () => resolve(seen));
    });
    expect(indexes.length === 300 && indexes.every((v, i) => v === i),
           `got ${indexes.length} replies`);
  });
  await run('concurrent_calls', async () => {
    const calls = [];
    for (let i = 0; i < 100; ++i) calls.push(unary(echo, 'Echo', {message: `c${i}`}));
    const results = await Promise.all(calls);
    expect(results.every((r, i) => !r.error && r.reply.message === `c${i}`),
           'a concurrent call failed or got another reply');
  });
  echo.close();
  gzipped.close();
  streams.close();
  process.exit(failures.length === 0 ? 0 : 1);
})();
