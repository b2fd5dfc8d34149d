// An independent client stack for `conclave serve --stdio`: vscode-jsonrpc (the library
// under VS Code's language client) drives the real binary over its stdio. Handshake,
// a task on the scripted model, a whiteboard watched live, an escalation answered,
// shutdown and exit.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import rpc from 'vscode-jsonrpc/node';

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.env.CONCLAVE_BIN ?? resolve(here, '../../target/debug/conclave');

/** Resolves with the first value `check` accepts among the events `subscribe` delivers. */
function waitFor(what, subscribe, check, ms = 30000) {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    const disposable = subscribe((value) => {
      if (check(value)) {
        clearTimeout(timer);
        disposable.dispose();
        resolvePromise(value);
      }
    });
  });
}

function workspace() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-node-')));
  const script = [
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }, { description: 'Create c.txt' }] }) },
    { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    { match: 'Create c.txt', error: 'unauthorized', repeat: true },
  ];
  writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
  writeFileSync(
    join(dir, 'conclave.toml'),
    [
      'heartbeatMs = 1000',
      'writes = "disk"',
      '[llm]', 'provider = "scripted"', 'script = "script.json"',
      '[governance]', 'review = "rules"',
      '[recovery.call]', 'maxAttempts = 1',
      '[recovery.severity.low]', 'baseDelayMs = 10',
      '[recovery.severity.medium]', 'baseDelayMs = 10',
      '[recovery.severity.high]', 'baseDelayMs = 10',
      '',
    ].join('\n'),
  );
  return dir;
}

test('handshake, a task, a live whiteboard and an answered escalation over vscode-jsonrpc', async () => {
  const dir = workspace();
  const child = spawn(binary, ['serve', '--stdio'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise((done) => child.on('exit', (code) => done(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.StreamMessageWriter(child.stdin),
  );

  const taskUpdates = new rpc.Emitter();
  const boardChanges = new rpc.Emitter();
  const approvals = [];
  connection.onNotification('conclave/taskUpdated', (params) => taskUpdates.fire(params.task));
  connection.onNotification('conclave/whiteboardChanged', (params) => boardChanges.fire(params));
  connection.onRequest('conclave/requestApproval', (params) => {
    approvals.push(params);
    return { decision: 'abort', note: 'not with these credentials' };
  });
  connection.listen();

  try {
    const init = await connection.sendRequest('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(dir).href,
      capabilities: { experimental: { conclave: { approvals: true, whiteboards: true, recoveryStatus: true } } },
    });
    assert.deepEqual(init.capabilities.experimental.conclave, { protocolVersion: 1 });
    assert.equal(init.serverInfo.name, 'conclave');
    await connection.sendNotification('initialized', {});

    const board = await connection.sendRequest('conclave/subscribeWhiteboard', { id: 'global' });
    assert.equal(board.id, 'global');

    const versions = [];
    boardChanges.event((change) => {
      if (change.id === 'global') versions.push(change.version);
    });
    const finished = waitFor('the task to fail', taskUpdates.event, (task) => task.status === 'failed');
    const { taskId } = await connection.sendRequest('conclave/submitTask', { description: 'Make a.txt and c.txt' });
    assert.match(taskId, /^[0-9a-f-]{36}$/);

    const task = await finished;
    assert.equal(task.taskId, taskId);
    const byDescription = Object.fromEntries(task.subtasks.map((s) => [s.description, s]));
    assert.equal(byDescription['Create a.txt'].status, 'completed');
    assert.equal(byDescription['Create c.txt'].status, 'failed');

    assert.equal(approvals.length, 1, 'one escalation was asked');
    assert.equal(approvals[0].kind, 'escalation');
    assert.equal(approvals[0].severity, 'critical');
    assert.deepEqual(approvals[0].options.map((o) => o.id), ['retry', 'reassign', 'modify', 'abort']);
    assert.deepEqual(await connection.sendRequest('conclave/listApprovals', {}), { approvals: [] });

    const latest = await connection.sendRequest('conclave/readWhiteboard', { id: 'global' });
    if (versions.at(-1) !== latest.version) {
      // Coalesced: the latest version follows within 50 ms (the listener above records it).
      await waitFor('the latest global board', boardChanges.event, (c) => c.id === 'global' && c.version === latest.version);
    }
    assert.ok(versions.length >= 1, 'the global board changed while the team worked');
    assert.ok(versions[0] > board.version, `the first change (${versions[0]}) is newer than the subscription (${board.version})`);
    for (let i = 1; i < versions.length; i++) {
      assert.ok(versions[i] > versions[i - 1], `versions increase: ${versions.join(', ')}`);
    }

    await connection.sendRequest('shutdown');
    await connection.sendNotification('exit');
    assert.equal(await exited, 0);
  } finally {
    connection.dispose();
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
