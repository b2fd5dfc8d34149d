// MCP servers an ACP client offers in `session/new`, under the official ACP client
// (@agentclientprotocol/sdk): the session's tasks call their tools (asked as commands
// are), other sessions do not see them, `mcpCapabilities` says what is supported.
// The server is examples/mcp_echo.rs, made with the official Rust MCP SDK
// (MCP_ECHO_BIN overrides <repo>/target/debug/examples/mcp_echo; test.sh builds it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

// A server from the registries: @modelcontextprotocol/server-filesystem (pinned in
// package.json, installed by `npm ci`), run by node inside Conclave's sandbox.
const filesystemServer = resolve(here, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

test('MCP: the reference filesystem server from npm, offered by the client, is used by the task', async () => {
  assert.ok(existsSync(filesystemServer), 'npm ci installed @modelcontextprotocol/server-filesystem');
  const dir = workspace([
    { match: ['Plan this task', 'the answer'], text: plan({ description: 'Read the answer from notes/answer.md and write it to answer.txt' }) },
    { match: 'Read the answer', toolCalls: [{ name: 'mcp__fs__read_text_file', arguments: { path: 'NOTES' } }] },
    { match: 'the answer is 42', toolCalls: [{ name: 'file_write', arguments: { path: 'answer.txt', content: '42\n' } }] },
    { match: 'created answer.txt', text: 'Wrote answer.txt.' },
  ], { top: ['writes = "disk"'], extra: ['[approvals]', 'commands = "auto"'] });
  // The script names the file by its absolute path, which the temp folder decides.
  const notes = join(dir, 'notes', 'answer.md');
  const script = join(dir, 'script.json');
  writeFileSync(script, readFileSync(script, 'utf8').replace('NOTES', notes));
  mkdirSync(join(dir, 'notes'));
  writeFileSync(notes, '# Notes\n\nthe answer is 42\n');
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', {
      cwd: dir,
      mcpServers: [{ name: 'fs', command: process.execPath, args: [filesystemServer, dir], env: [] }],
    });
    const answer = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Read the answer from notes/answer.md and write it to answer.txt' }],
    });
    assert.equal(answer.stopReason, 'end_turn', `${agentText(acp.updates)}\n${acp.stderr().slice(-3000)}`);
    assert.equal(readFileSync(join(dir, 'answer.txt'), 'utf8'), '42\n');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});
