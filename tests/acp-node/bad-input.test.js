// Bad input on the wire, written raw (the SDK would never send it): a line that is not
// JSON, an unknown method, an unknown session, a batch. Each gets a JSON-RPC error and
// the agent stays up; stdout carries protocol lines only.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { workspace, cleanup, binary } from './harness.js';

test('bad input gets a JSON-RPC error and the agent stays up', async () => {
  const dir = workspace([{ text: 'unused', repeat: true }]);
  const child = spawn(binary, ['acp'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise((done) => child.on('exit', (code) => done(code)));
  const lines = createInterface({ input: child.stdout });
  const received = [];
  const waiting = [];
  lines.on('line', (line) => {
    // Every line on stdout is a JSON-RPC message.
    const message = JSON.parse(line);
    assert.equal(message.jsonrpc, '2.0');
    received.push(message);
    for (const w of [...waiting]) w();
  });
  const next = (check) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer; got ${JSON.stringify(received)}`)), 15000);
      const look = () => {
        const index = received.findIndex(check);
        if (index >= 0) {
          clearTimeout(timer);
          waiting.splice(waiting.indexOf(look), 1);
          resolve(received.splice(index, 1)[0]);
        }
      };
      waiting.push(look);
      look();
    });
  const send = (text) => child.stdin.write(`${text}\n`);
  try {
    send('this is not json');
    const parse = await next((m) => m.error?.code === -32700);
    assert.equal(parse.id, null);

    send('[{"jsonrpc":"2.0","id":9,"method":"initialize"}]');
    assert.equal((await next((m) => m.error?.code === -32600)).id, null);

    send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }));
    assert.equal((await next((m) => m.id === 1)).result.protocolVersion, 1);

    send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'conclave/nothing', params: {} }));
    assert.equal((await next((m) => m.id === 2)).error.code, -32601);

    send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'session/prompt', params: { sessionId: 'nope', prompt: [{ type: 'text', text: 'hi' }] } }));
    const unknown = await next((m) => m.id === 3);
    assert.equal(unknown.error.code, -32002);
    assert.deepEqual(unknown.error.data, { sessionId: 'nope' });

    send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'session/load', params: { sessionId: '00000000-0000-4000-8000-000000000000', cwd: dir, mcpServers: [] } }));
    assert.equal((await next((m) => m.id === 4)).error.code, -32002);

    send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'session/new', params: { mcpServers: [] } }));
    assert.equal((await next((m) => m.id === 5)).error.code, -32602, 'cwd is required');

    // Still up: a session can be made.
    send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'session/new', params: { cwd: dir, mcpServers: [] } }));
    assert.match((await next((m) => m.id === 6)).result.sessionId, /^[0-9a-f-]{36}$/);

    child.stdin.end();
    assert.equal(await exited, 0);
  } finally {
    child.kill('SIGKILL');
    cleanup(dir);
  }
});
