// Refusals and ownership under the official ACP client, on the real binary: an error the
// client sends for fs/write_text_file or fs/read_text_file is a refusal (nothing is
// written or read behind its back, and the same change is not asked for again), and a
// task whose session went away neither runs nor writes under another session.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';
import { workspace, cleanup, start, agentText } from './harness.js';

const plan = (...subtasks) => JSON.stringify({ subtasks });
const write = (path, content) => ({ name: 'file_write', arguments: { path, content } });
const denied = (what) => new RequestError(-32603, `Permission denied for ${what}`);

test('a refused fs/write_text_file is not written to disk, nor asked for again', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create w.txt' }) },
    { match: 'Create w.txt', toolCalls: [write('w.txt', 'refused content\n')] },
    // The model proposes the very same change again, as small models do.
    { match: 'Permission denied', toolCalls: [write('w.txt', 'refused content\n')] },
    { text: 'The editor refused w.txt.', repeat: true },
  ]);
  const acp = start(dir, { write: () => { throw denied('fs/write_text_file'); } });
  try {
    await acp.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    await acp.agent
      .request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create w.txt' }] })
      .catch(() => {});
    await acp.waitFor('the closing message', (n) => /refused|Permission denied/.test(n.update?.content?.text ?? ''))
      .catch(() => {});
    assert.equal(existsSync(join(dir, 'w.txt')), false, 'nothing was written behind the editor\'s back');
    assert.equal(acp.writes.length, 1, `the refused change was asked for once: ${JSON.stringify(acp.writes)}`);
    assert.match(agentText(acp.updates), /refused|Permission denied/i);
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('a refused fs/read_text_file is not read from disk instead', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Summarise notes.md' }) },
    // Whatever reaches the model with the disk's text writes a marker.
    { match: 'DISK-ONLY-CANARY', toolCalls: [write('leaked.txt', 'leaked\n')], repeat: true },
    { match: 'Summarise notes.md', toolCalls: [{ name: 'file_read', arguments: { path: 'notes.md' } }] },
    { text: 'I could not read notes.md: the editor refused.', repeat: true },
  ]);
  writeFileSync(join(dir, 'notes.md'), 'DISK-ONLY-CANARY\n');
  const acp = start(dir, { read: () => { throw denied('fs/read_text_file'); } });
  try {
    await acp.initialize({ fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    await acp.agent
      .request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Summarise the notes in a sentence' }] })
      .catch(() => {});
    assert.ok(acp.reads.length >= 1, 'the editor was asked');
    assert.equal(existsSync(join(dir, 'leaked.txt')), false, 'the disk copy never reached the model');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('a task whose session is gone stays parked, and writes nothing under another session', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create owned.txt' }) },
    { match: 'Create owned.txt', toolCalls: [write('owned.txt', 'mine\n')] },
    { match: 'created owned.txt', text: 'Wrote owned.txt.' },
  ], { extra: ['[approvals]', 'fileChanges = "ask"'] });
  // The first client never answers the permission, then goes away for good.
  const first = start(dir);
  let second;
  let third;
  try {
    await first.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    const { sessionId } = await first.agent.request('session/new', { cwd: dir, mcpServers: [] });
    first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create owned.txt' }] }).catch(() => {});
    await first.waitFor('the permission', (v) => v.permission);
    first.child.kill('SIGKILL');
    await first.exited;

    // A stranger's session on the same workspace: the abandoned task must not run for it.
    second = start(dir, { permission: () => ({ outcome: { outcome: 'selected', optionId: 'approve' } }) });
    await second.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    const { sessionId: stranger } = await second.agent.request('session/new', { cwd: dir, mcpServers: [] });
    await new Promise((done) => setTimeout(done, 3000));
    assert.equal(second.permissions.length, 0, 'no permission asked under the stranger\'s session');
    assert.equal(second.writes.length, 0, 'no fs/write_text_file under the stranger\'s session');
    assert.equal(existsSync(join(dir, 'owned.txt')), false);
    assert.notEqual(stranger, sessionId);
    second.stop();
    await second.exited;

    // Its own session comes back: the task runs again, under it.
    third = start(dir, { permission: () => ({ outcome: { outcome: 'selected', optionId: 'approve' } }) });
    await third.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    await third.agent.request('session/load', { sessionId, cwd: dir, mcpServers: [] });
    await third.waitFor('the resumed task to end', (n) => /\*\*Done\.\*\*/.test(n.update?.content?.text ?? ''));
    assert.ok(third.permissions.every((p) => p.sessionId === sessionId));
    assert.deepEqual(third.writes.map((w) => w.sessionId), [sessionId]);
    assert.equal(readFileSync(join(dir, 'owned.txt'), 'utf8'), 'mine\n');
  } finally {
    first.stop();
    second?.stop();
    third?.stop();
    cleanup(dir);
  }
});
