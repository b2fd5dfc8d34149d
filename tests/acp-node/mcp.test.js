// MCP servers an ACP client offers in `session/new`, under the official ACP client
// (@agentclientprotocol/sdk): the session's tasks call their tools (asked as commands
// are), other sessions do not see them, `mcpCapabilities` says what is supported.
// The server is examples/mcp_echo.rs, made with the official Rust MCP SDK
// (MCP_ECHO_BIN overrides <repo>/target/debug/examples/mcp_echo; test.sh builds it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workspace, cleanup, start, agentText } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const echo = process.env.MCP_ECHO_BIN ?? resolve(here, '../../target/debug/examples/mcp_echo');
const plan = (...subtasks) => JSON.stringify({ subtasks });
const calls = (dir) => {
  const log = join(dir, 'mcp-echo-calls.log');
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
};

test('MCP: a stdio server offered in session/new serves that session\'s tasks, asked as a command', async () => {
  assert.ok(existsSync(echo), `${echo} is built (cargo build --example mcp_echo)`);
  const dir = workspace([
    { match: ['Plan this task', 'Look up the colour'], text: plan({ description: 'Look up the colour and write it to colour.txt' }) },
    { match: 'Look up the colour', toolCalls: [{ name: 'mcp__echo__lookup', arguments: { key: 'colour' } }] },
    { match: 'colour = teal', toolCalls: [{ name: 'file_write', arguments: { path: 'colour.txt', content: 'teal\n' } }] },
    { match: 'created colour.txt', text: 'Wrote colour.txt.' },
    // The other session's task: the tool is not there for it.
    { match: ['Plan this task', 'Look up the size'], text: plan({ description: 'Look up the size' }) },
    { match: 'Look up the size', toolCalls: [{ name: 'mcp__echo__lookup', arguments: { key: 'size' } }] },
    { match: 'unknown tool `mcp__echo__lookup`', text: 'There is no such tool here.', repeat: true },
  ], { top: ['writes = "disk"'] });
  const acp = start(dir, { permission: () => ({ outcome: { outcome: 'selected', optionId: 'approve' } }) });
  try {
    const init = await acp.initialize();
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: false });

    const { sessionId } = await acp.agent.request('session/new', {
      cwd: dir,
      mcpServers: [
        { name: 'echo', command: echo, args: [], env: [{ name: 'MCP_ECHO_VALUES', value: 'colour=teal,size=9' }] },
        // Declined (SSE is not supported) without failing the session.
        { type: 'sse', name: 'legacy', url: 'http://127.0.0.1:9/sse', headers: [] },
      ],
    });
    const answer = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Look up the colour and write it to colour.txt' }],
    });
    assert.equal(answer.stopReason, 'end_turn', agentText(acp.updates));
    assert.equal(readFileSync(join(dir, 'colour.txt'), 'utf8'), 'teal\n');
    assert.deepEqual(calls(dir), ['lookup {"key":"colour"}']);
    // Asked as a command is, with the call shown.
    const asked = acp.permissions.find((p) => (p.toolCall.title ?? '').includes('mcp__echo__lookup'));
    assert.ok(asked, `the call was asked: ${JSON.stringify(acp.permissions.map((p) => p.toolCall.title))}`);
    assert.equal(asked.toolCall.kind, 'execute');
    assert.match(acp.stderr(), /offered MCP server is not used: .*SSE/);

    // A session that offered no server: its task is not given the tool.
    const other = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const second = await acp.agent.request('session/prompt', {
      sessionId: other.sessionId,
      prompt: [{ type: 'text', text: 'Look up the size' }],
    });
    assert.equal(second.stopReason, 'end_turn');
    assert.deepEqual(calls(dir), ['lookup {"key":"colour"}'], 'no call reached the server');

    // Closing the session stops its server.
    assert.deepEqual(await acp.agent.request('session/close', { sessionId }), {});
    const pid = Number(readFileSync(join(dir, 'mcp-echo.pid'), 'utf8'));
    assert.ok(pid > 1, 'the server wrote its pid');
    const deadline = Date.now() + 5000;
    const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
    while (alive() && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
    assert.ok(!alive(), 'the server process is gone once its session closed');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});
