// What a person sees when the server cannot start or is busy, and the small renderings the
// window shows (times, progress, buttons, provider notices, the Modify pre-fill). The busy
// case runs two real servers on one folder.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import * as rpc from 'vscode-jsonrpc/node';
import * as lsp from '../src/lsp_ext';
import { agentStatusLabel } from '../src/model/agents';
import { buttonLabel, modifyDefault, presentApproval } from '../src/model/approvals';
import { describeStartFailure, stderrLevel } from '../src/model/startup';
import { StatusModel } from '../src/model/status';
import { progressLabel, TasksModel } from '../src/model/tasks';
import { readableTime } from '../src/model/time';
import { lockHolder, stopHolder } from '../src/takeover';
import { BINARY, scriptedWorkspace, startServer } from './harness';

const AT = '2026-01-01T00:00:00Z';

/** `initialize` from a second server on `dir`: the error it answers and its stderr lines. */
async function secondServer(dir: string): Promise<{ error: unknown; stderr: string[]; code: number | null }> {
  const child = spawn(BINARY, ['serve', '--stdio'], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.on('data', (d) =>
    stderr.push(
      ...String(d)
        .split('\n')
        .filter((l) => l.trim()),
    ),
  );
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout!),
    new rpc.StreamMessageWriter(child.stdin!),
  );
  connection.listen();
  let error: unknown;
  try {
    await connection.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).href, capabilities: {} });
  } catch (e) {
    error = e;
  }
  const code = await exited;
  connection.dispose();
  return { error, stderr, code };
}

test('a folder served by another live server: one message naming its pid, with Take Over; Take Over frees the folder', async () => {
  const first = await startServer(scriptedWorkspace([{ text: 'unused' }]));
  try {
    const second = await secondServer(first.dir);
    assert.equal(second.code, 1, 'the second server exits');
    const failure = describeStartFailure(second.error, second.stderr);
    assert.equal(failure.kind, 'workspace_busy');
    assert.ok(failure.kind === 'workspace_busy');
    assert.equal(failure.holderPid, first.child.pid, 'the holder is the first server');
    assert.match(
      failure.message,
      new RegExp(`another Conclave server \\(pid ${first.child.pid}\\) already serves this folder`),
    );
    assert.deepEqual(failure.actions, ['Take Over', 'Retry', 'Show Output']);

    // The client may see the connection close before it reads the error answer: stderr says it.
    const raced = describeStartFailure(
      new Error('Pending response rejected since connection got disposed'),
      second.stderr,
    );
    assert.equal(raced.kind, 'workspace_busy');
    assert.ok(raced.kind === 'workspace_busy' && raced.holderPid === first.child.pid);

    // Neither the answer nor stderr: the lock file still names the live holder.
    const holder = lockHolder(first.dir);
    assert.equal(holder?.pid, first.child.pid, 'the lock file names the holder');
    const blind = describeStartFailure(
      new Error('Pending response rejected since connection got disposed'),
      [],
      holder,
    );
    assert.ok(blind.kind === 'workspace_busy' && blind.holderPid === first.child.pid);

    // Take Over stops the holder; the folder can be served again.
    assert.deepEqual(await stopHolder(first.child.pid!), { ok: true });
    assert.notEqual(first.child.exitCode ?? first.child.signalCode, null, 'the holder is gone');
    const third = await startServer(first.dir);
    assert.equal(third.initializeResult.serverInfo?.name, 'conclave', 'a new server serves the folder');
    await third.shutdown();
  } finally {
    first.dispose();
  }
});

test('Take Over refuses to stop a process that is not a conclave server', async () => {
  const sleeper = spawn('sleep', ['30']);
  try {
    const result = await stopHolder(sleeper.pid!);
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.message : '', /is not a conclave server/);
    assert.equal(sleeper.exitCode, null, 'it still runs');
  } finally {
    sleeper.kill();
  }
});

test('the busy message names the editor the holder serves when the server says', () => {
  const error = new rpc.ResponseError(1007, 'another `conclave serve` (pid 4242, …) is already serving /p', {
    workspace: '/p',
    holder: { pid: 4242, client: { name: 'Visual Studio Code', version: '1.100.3' } },
  });
  const failure = describeStartFailure(error);
  assert.equal(failure.kind, 'workspace_busy');
  assert.ok(failure.kind === 'workspace_busy' && failure.holderPid === 4242);
  assert.match(
    failure.message,
    /another Conclave server \(pid 4242, for Visual Studio Code 1\.100\.3\) already serves this folder/,
  );
});

test("other start failures keep the server's words; stderr log lines are not repeated as errors", () => {
  const config = describeStartFailure(
    new rpc.ResponseError(-32602, 'conclave.toml is not valid: unknown field `llm.modle`'),
  );
  assert.equal(config.kind, 'other');
  assert.equal(
    config.message,
    'Conclave: the server did not start: conclave.toml is not valid: unknown field `llm.modle`',
  );
  assert.equal(stderrLevel('2026-01-01T00:00:00.123456Z  INFO subtask finished iterations=2'), 'trace');
  assert.equal(stderrLevel('\x1b[2m2026-01-01T00:00:00Z\x1b[0m \x1b[31mERROR\x1b[0m boom'), 'trace');
  assert.equal(stderrLevel("thread 'main' panicked at src/main.rs:3:5"), 'error');
  assert.equal(stderrLevel('   '), undefined);
});

test('times read as a person reads them; failed and cancelled tasks show no percentage', () => {
  const now = new Date(2026, 0, 31, 15, 0, 0);
  const today = new Date(2026, 0, 31, 14, 5, 9, 123).toISOString().replace('.123Z', '.123456789Z');
  assert.equal(readableTime(today, now), '14:05:09');
  const earlier = new Date(2026, 0, 2, 8, 7, 0).toISOString();
  assert.equal(readableTime(earlier, now), '2026-01-02 08:07');
  assert.equal(readableTime('not a time', now), 'not a time');

  assert.equal(progressLabel({ status: 'failed', progress: 99.5 }), undefined);
  assert.equal(progressLabel({ status: 'cancelled', progress: 99 }), undefined);
  assert.equal(progressLabel({ status: 'running', progress: 99.9 }), '99%');
  assert.equal(progressLabel({ status: 'completed', progress: 99.9 }), '100%');
  const tasks = new TasksModel();
  tasks.updateTask({
    taskId: 't',
    title: 'T',
    status: 'failed',
    progress: 99,
    createdAt: AT,
    updatedAt: AT,
    subtasks: [],
    recovery: null,
  });
  const row = tasks.row({ kind: 'task', task: tasks.task('t')! });
  assert.doesNotMatch(row.description, /%/);
  assert.equal(row.description, 'failed');
});

test('approval buttons are short, the detail says what they do; Modify starts from the subtask', () => {
  const approval: lsp.ApprovalRequest = {
    approvalId: 'a1',
    kind: 'escalation',
    taskId: 't',
    subtaskId: 's2',
    agentId: 'mid-1',
    severity: 'medium',
    title: '[2/2] Write cli.py keeps failing',
    detail: 'It failed 3 times.',
    proposedSolution: 'Try a stronger model.',
    options: [
      { id: 'retry', title: 'Retry' },
      { id: 'reassign', title: 'Reassign to another agent' },
      { id: 'modify', title: 'Modify the subtask' },
      { id: 'abort', title: 'Abort the subtask' },
    ],
    createdAt: AT,
  };
  const view = presentApproval(approval);
  assert.deepEqual(
    view.buttons.map((b) => b.title),
    ['Retry', 'Reassign', 'Modify…', 'Abort'],
  );
  assert.match(
    view.message,
    /Reassign: reassign to another agent · Modify: modify the subtask · Abort: abort the subtask/,
  );
  assert.equal(buttonLabel({ id: 'approve', title: 'Approve' }), 'Approve');

  const tasks = new TasksModel();
  assert.equal(modifyDefault(approval, tasks), 'Try a stronger model.', 'unknown subtask: the advice');
  assert.equal(
    modifyDefault({ ...approval, subtaskDescription: 'Write cli.py (from the server)' }, tasks),
    'Write cli.py (from the server)',
  );
  tasks.updateTask({
    taskId: 't',
    title: 'T',
    status: 'escalated',
    progress: 50,
    createdAt: AT,
    updatedAt: AT,
    recovery: null,
    subtasks: [
      { subtaskId: 's1', description: 'Write lib.py', status: 'completed', attempts: 1 },
      { subtaskId: 's2', description: 'Write cli.py with argparse', status: 'escalated', attempts: 3 },
    ],
  } as lsp.TaskSummary);
  assert.equal(modifyDefault(approval, tasks), 'Write cli.py with argparse');
});

test('the status bar shows whatever provider-wide recovery message arrives, counting down', () => {
  const status = new StatusModel();
  const waiting: lsp.RecoveryEvent = {
    taskId: '',
    agentId: '',
    action: 'retry',
    severity: 'high',
    attempt: 1,
    maxAttempts: 0,
    delayMs: 20000,
    message: 'waiting for openai, next try in 20 s',
    at: AT,
  };
  status.recovery(waiting, 0);
  assert.equal(status.render(0).text, 'Conclave: idle · ⏸ waiting for openai, next try in 20 s');
  assert.equal(status.render(0).ticking, true);
  assert.equal(status.render(5500).text, 'Conclave: idle · ⏸ waiting for openai, next try in 15 s');
  assert.match(status.render(5500).tooltip, /waiting for openai, next try in 20 s/);
  assert.equal(status.render(21000).text, 'Conclave: idle', 'gone once its time ran out');
  status.recovery({ ...waiting, delayMs: null, message: 'provider anthropic paused for 30 s after 6 failures' }, 30000);
  assert.equal(status.render(40000).text, 'Conclave: idle · ⏸ provider anthropic paused for 30 s after 6 failures');
  status.recovery({ ...waiting, action: 'circuit_closed', message: 'closed' }, 41000);
  assert.equal(status.render(41000).text, 'Conclave: idle');
});

test('agent states read distinctly', () => {
  assert.equal(agentStatusLabel('waiting_approval'), 'waiting for approval');
  assert.equal(agentStatusLabel('blocked'), 'blocked');
  assert.equal(agentStatusLabel('failed'), 'failed');
});
