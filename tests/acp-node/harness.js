// Starts the real `conclave acp` binary on a temp workspace with a scripted model and
// connects the official ACP client (@agentclientprotocol/sdk: `client()` + `ndJsonStream`,
// the SDK's successor of ClientSideConnection) to its stdio.

import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { client, ndJsonStream } from '@agentclientprotocol/sdk';

const here = dirname(fileURLToPath(import.meta.url));
export const binary = process.env.CONCLAVE_BIN ?? resolve(here, '../../target/debug/conclave');

/**
 * A temp workspace with `script` as the scripted model; `top` are top-level lines of
 * conclave.toml, `extra` whole sections appended at the end.
 */
export function workspace(script, { top = [], extra = [] } = {}) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-acp-')));
  writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
  writeFileSync(
    join(dir, 'conclave.toml'),
    [
      'heartbeatMs = 1000',
      ...top,
      '[llm]', 'provider = "scripted"', 'script = "script.json"',
      '[governance]', 'review = "rules"',
      '[recovery.call]', 'maxAttempts = 1',
      '[recovery.severity.low]', 'baseDelayMs = 10',
      '[recovery.severity.medium]', 'baseDelayMs = 10',
      '[recovery.severity.high]', 'baseDelayMs = 10',
      ...extra,
      '',
    ].join('\n'),
  );
  return dir;
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Spawns `conclave acp` in `dir` and connects the SDK client. `handlers` may answer
 * `permission(params)` and `write(params)`; every `session/update` is kept in `updates`.
 */
export function start(dir, handlers = {}) {
  const child = spawn(binary, ['acp'], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal })));
  const updates = [];
  const listeners = new Set();
  const permissions = [];
  const writes = [];
  const app = client({ name: 'conclave-acp-node-test' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
      for (const listener of listeners) listener(params);
    })
    .onRequest('session/request_permission', async ({ params }) => {
      permissions.push(params);
      for (const listener of listeners) listener({ permission: params });
      if (!handlers.permission) return new Promise(() => {});
      return handlers.permission(params);
    })
    .onRequest('fs/write_text_file', async ({ params }) => {
      writes.push(params);
      if (handlers.write) return handlers.write(params);
      writeFileSync(params.path, params.content);
      return {};
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const connection = app.connect(stream);
  const agent = connection.agent;

  /** Resolves with the first update (or `{permission}`) `check` accepts, past or future. */
  function waitFor(what, check, ms = 30000) {
    const seen = updates.find(check) ?? permissions.map((p) => ({ permission: p })).find(check);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`timed out waiting for ${what}; stderr:\n${stderr.slice(-4000)}`));
      }, ms);
      const listener = (value) => {
        if (check(value)) {
          clearTimeout(timer);
          listeners.delete(listener);
          resolvePromise(value);
        }
      };
      listeners.add(listener);
    });
  }

  async function initialize(capabilities = {}) {
    return agent.request('initialize', {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, ...capabilities },
      clientInfo: { name: 'conclave-acp-node-test', version: '1.0.0' },
    });
  }

  function stop() {
    connection.close();
    child.kill('SIGKILL');
  }

  return {
    child,
    agent,
    connection,
    updates,
    permissions,
    writes,
    exited,
    waitFor,
    initialize,
    stop,
    stderr: () => stderr,
  };
}

/** The session's updates of one kind. */
export function ofKind(updates, kind) {
  return updates.filter((n) => n.update?.sessionUpdate === kind).map((n) => n.update);
}

/** Every agent message's text, joined. */
export function agentText(updates) {
  return ofKind(updates, 'agent_message_chunk')
    .map((u) => u.content.text ?? '')
    .join('');
}

/** The tool call (and its updates merged in) whose title is `title`. */
export function toolCall(updates, title) {
  const first = ofKind(updates, 'tool_call').find((c) => c.title === title);
  if (!first) return undefined;
  const merged = { ...first, history: [first] };
  for (const u of ofKind(updates, 'tool_call_update')) {
    if (u.toolCallId !== first.toolCallId) continue;
    merged.history.push(u);
    for (const [k, v] of Object.entries(u)) if (v !== undefined && v !== null) merged[k] = v;
  }
  return merged;
}

/** The text of a tool call's content. */
export function contentText(content = []) {
  return content.map((c) => c.content?.text ?? '').join('\n');
}
