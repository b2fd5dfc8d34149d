// The pure parts on their own (status-bar countdown, settings, binary checks) and the
// applyEdit path against the real server: which documents a Conclave edit touches.

import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkBinary } from '../src/binary';
import * as lsp from '../src/lsp_ext';
import { TaskDetails } from '../src/model/details';
import { editedUris, type WorkspaceEditLike } from '../src/model/edits';
import { reportDocument, reportPath, reportTaskId } from '../src/model/report';
import { initializationOptions } from '../src/model/settings';
import { StatusModel } from '../src/model/status';
import { TasksModel } from '../src/model/tasks';
import { compareTimestamps, readableTime } from '../src/model/time';
import { whiteboardIdFromPath, whiteboardPath } from '../src/model/whiteboards';
import { BINARY, fileUri, scriptedWorkspace, startServer } from './harness';

const AT = '2026-01-01T00:00:00Z';

function task(status: lsp.TaskStatus, recovery: lsp.RecoveryEvent | null = null, id = 't1'): lsp.TaskSummary {
  return {
    taskId: id,
    title: `Task ${id}`,
    status,
    progress: 40,
    createdAt: AT,
    updatedAt: AT,
    subtasks: [],
    recovery,
  };
}

test('status bar: retry countdown in seconds, escalated, failed, idle', () => {
  const status = new StatusModel();
  assert.equal(status.render(0).text, 'Conclave: idle');
  const retry: lsp.RecoveryEvent = {
    taskId: 't1',
    agentId: 'a',
    action: 'retry',
    severity: 'medium',
    attempt: 2,
    maxAttempts: 3,
    delayMs: 4000,
    message: 'HTTP 503; retry 2/3 in 4 s',
    at: AT,
  };
  status.updateTask(task('running'), 0);
  assert.equal(status.render(0).text, 'Conclave: 1 running');
  status.recovery(retry, 1000);
  status.updateTask({ ...task('recovering', retry), updatedAt: '2026-01-01T00:00:01Z' }, 1000);
  assert.equal(status.render(1000).text, 'Conclave: 1 running · ↻ retry 2/3 in 4 s');
  assert.equal(status.render(1000).ticking, true);
  assert.equal(status.render(3500).text, 'Conclave: 1 running · ↻ retry 2/3 in 2 s');
  assert.equal(status.render(6000).text, 'Conclave: 1 running · ↻ retry 2/3');
  assert.equal(status.render(6000).ticking, false);
  status.updateTask({ ...task('escalated', retry), updatedAt: '2026-01-01T00:00:02Z' });
  assert.equal(status.render().text, 'Conclave: ⚠ escalated');
  status.updateTask({ ...task('failed'), updatedAt: '2026-01-01T00:00:03Z' });
  assert.equal(status.render().text, 'Conclave: ✖ failed');
  assert.equal(status.render().taskId, 't1');
  status.updateTask({ ...task('completed', null, 't2'), updatedAt: '2026-01-01T00:00:04Z' });
  assert.equal(status.render().text, 'Conclave: idle');
  status.recovery({ ...retry, taskId: '', action: 'circuit_open', message: 'provider down' });
  assert.equal(status.render().text, 'Conclave: idle · ⏸ provider paused');
});

test('timestamps compare by instant whatever their fraction digits; an older task update is ignored', () => {
  assert.ok(compareTimestamps('2026-01-01T00:00:05Z', '2026-01-01T00:00:05.5Z') < 0);
  assert.ok(compareTimestamps('2026-01-01T00:00:05.123Z', '2026-01-01T00:00:05.123456Z') < 0);
  assert.ok(compareTimestamps('2026-01-01T00:00:05.9Z', '2026-01-01T00:00:06Z') < 0);
  assert.equal(compareTimestamps('2026-01-01T00:00:05.100Z', '2026-01-01T00:00:05.1Z'), 0);
  assert.ok(compareTimestamps('2026-01-01T01:00:00+01:00', '2026-01-01T00:00:00.000000001Z') < 0);

  const tasks = new TasksModel();
  tasks.updateTask({ ...task('running'), updatedAt: '2026-01-01T00:00:05.123456Z' });
  tasks.updateTask({ ...task('queued'), updatedAt: '2026-01-01T00:00:05.123Z' });
  assert.equal(tasks.task('t1')!.status, 'running', 'the late, older update does not win');
  tasks.updateTask({ ...task('completed'), updatedAt: '2026-01-01T00:00:06Z' });
  assert.equal(tasks.task('t1')!.status, 'completed');
});

test('a task whose code was never run says "not checked"; a parked one says why it waits', () => {
  const tasks = new TasksModel();
  tasks.updateTask({
    ...task('completed'),
    unchecked: 'not checked: running code was refused (approvals.commands = "deny")',
  });
  tasks.updateTask({ ...task('queued', null, 't2'), parked: 'waiting for the ACP session s1 to be loaded again' });
  const rows = tasks.roots().map((node) => tasks.row(node));
  const done = rows.find((r) => r.label === 'Task t1')!;
  assert.equal(done.description, 'completed · not checked · 100%');
  assert.match(done.tooltip, /running code was refused/);
  const parked = rows.find((r) => r.label === 'Task t2')!;
  assert.match(parked.description, /parked/);
  assert.match(parked.tooltip, /ACP session s1/);
});

test('a completion only the team\'s own test ran says "review"; a checked one, or one with no code, does not', () => {
  const tasks = new TasksModel();
  tasks.updateTask({ ...task('completed'), checkedBy: 'ownTestOnly' });
  tasks.updateTask({ ...task('completed', null, 't2'), checkedBy: 'projectTests' });
  tasks.updateTask({ ...task('completed', null, 't3'), checkedBy: 'nothing' });
  const rows = tasks.roots().map((node) => tasks.row(node));
  const own = rows.find((r) => r.label === 'Task t1')!;
  assert.equal(own.description, 'completed · review · 100%');
  assert.match(own.tooltip, /only a test the team wrote itself\. Review the change\./);
  const tested = rows.find((r) => r.label === 'Task t2')!;
  assert.equal(tested.description, 'completed · 100%');
  assert.match(tested.tooltip, /Checked by: tests in the project/);
  const noCode = rows.find((r) => r.label === 'Task t3')!;
  assert.equal(noCode.description, 'completed · 100%');
  assert.match(noCode.tooltip, /Checked by: nothing/);
  tasks.updateTask({ ...task('completed', null, 't4'), checkedBy: 'disputed' });
  const disputed = tasks
    .roots()
    .map((node) => tasks.row(node))
    .find((r) => r.label === 'Task t4')!;
  assert.equal(disputed.description, 'completed · review · 100%');
  assert.match(
    disputed.tooltip,
    /other evidence gives what the code gives \(a second solution written from the task alone, or the code's own inverse function\)\. Review the change\./,
  );
});

test('a final report written after the task ended: fetched again, first under the task, headed by its writer', async () => {
  const ended = task('completed');
  const reported = { ...ended, updatedAt: '2026-01-01T00:00:01.5Z' };
  const report: lsp.FinalReport = {
    by: 'top-1',
    at: reported.updatedAt,
    text: 'The task completed: 0 of 0 subtasks completed.\n- the plan: signed by mid-1\n',
  };
  const detail = (summary: lsp.TaskSummary, finalReport?: lsp.FinalReport): lsp.TaskDetail => ({
    ...summary,
    description: 'Do it',
    filesWritten: [],
    result: null,
    partialResults: [],
    errors: [],
    finalReport,
  });
  // The server answers as it stands: the task ended, then (a moment later) its report.
  let current = detail(ended);
  let asked = 0;
  const requester = {
    sendRequest: () => {
      asked++;
      return Promise.resolve(current);
    },
  };
  const details = new TaskDetails(() => requester as never);
  const tasks = new TasksModel(
    () => undefined,
    (id) => details.get(id),
  );
  details.onDidChange((id) => tasks.detailChanged(id));
  const node = { kind: 'task', task: ended } as const;
  tasks.updateTask(ended);
  await details.ensure('t1');
  assert.deepEqual(tasks.children(node), []);
  assert.equal(tasks.row(node).collapsible, false);
  assert.doesNotMatch(tasks.row(node).tooltip, /Final report/);
  assert.match(reportDocument(details.get('t1')!), /has not written its final report on this task \(completed\) yet/);

  // The report's own conclave/taskUpdated: nothing but updatedAt moved in the summary.
  current = detail(reported, report);
  tasks.updateTask(reported);
  details.summaryChanged(reported);
  await new Promise((done) => setTimeout(done, 10));
  assert.equal(asked, 2, 'the finished task changed: its detail was fetched again');
  const children = tasks.children(node);
  assert.deepEqual(
    children.map((n) => n.kind),
    ['report'],
  );
  const row = tasks.row(children[0]);
  assert.equal(row.label, 'Final report by top-1');
  assert.equal(row.description, 'The task completed: 0 of 0 subtasks completed.');
  assert.match(
    row.tooltip,
    /^Final report by top-1, .*\n\nThe task completed: 0 of 0 subtasks completed\.\n- the plan: signed by mid-1\n/,
  );
  // A task without subtasks opens to show it (a new id: VS Code keeps a leaf's state).
  assert.equal(tasks.row(node).collapsible, true);
  assert.equal(tasks.row(node).id, 'task:t1:reported');
  assert.match(tasks.row(node).tooltip, /^Final report by top-1: The task completed: 0 of 0 subtasks completed\.$/m);
  assert.equal(
    reportDocument(details.get('t1')!),
    [
      '# Final report by top-1',
      '',
      `On the task "Task t1" (completed), written ${readableTime(report.at)}.`,
      '',
      'The task completed: 0 of 0 subtasks completed.',
      '- the plan: signed by mid-1',
      '',
    ].join('\n'),
  );
  assert.equal(reportTaskId(reportPath('t1', 'Make a.txt / b.txt')), 't1');
  assert.equal(reportPath('t1', 'Make a.txt / b.txt'), '/t1/Make-a.txt-b.txt-final-report.md');

  // The same summary again (listTasks after a restart): no fetch.
  details.summaryChanged(reported);
  await new Promise((done) => setTimeout(done, 10));
  assert.equal(asked, 2);
  details.dispose();
  tasks.dispose();
});

test('the protocol and model modules import nothing but vscode-jsonrpc and each other', () => {
  const src = join(__dirname, '../../src');
  const files = ['lsp_ext.ts', 'binary.ts', ...readdirSync(join(src, 'model')).map((f) => `model/${f}`)];
  for (const file of files) {
    const text = readFileSync(join(src, file), 'utf8');
    for (const [, spec] of text.matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)) {
      assert.ok(
        spec.startsWith('.') || spec === 'vscode-jsonrpc' || spec.startsWith('node:'),
        `${file} imports ${spec}`,
      );
    }
  }
});

test('settings: empty values are left to conclave.toml; trusted workspaces keep their choice', () => {
  assert.deepEqual(initializationOptions({ llm: { provider: '', model: ' ' }, approvals: {} }, true), {
    initializationOptions: {},
    notice: undefined,
  });
  assert.deepEqual(
    initializationOptions(
      {
        llm: { provider: 'openai', model: 'm', baseUrl: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'KEY' },
        approvals: { commands: 'auto' },
      },
      true,
    ).initializationOptions,
    {
      llm: { provider: 'openai', model: 'm', baseUrl: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'KEY' },
      approvals: { commands: 'auto' },
    },
  );
  const untrusted = initializationOptions({ llm: {}, approvals: {} }, false);
  assert.deepEqual(untrusted.initializationOptions, { approvals: { commands: 'deny' } });
  assert.match(untrusted.notice!, /not trusted.*"deny"/);
});

test('whiteboard virtual document paths round-trip', () => {
  for (const id of ['global', 'layer:mid', 'agent:0f35c0de-1111-2222-3333-444455556666']) {
    assert.equal(whiteboardIdFromPath(whiteboardPath(id)), id);
  }
  assert.equal(whiteboardIdFromPath('/nope.txt'), undefined);
});

test('binary checks: the real binary, a missing one, a non-executable one, one whose --version fails', async () => {
  const ok = await checkBinary(BINARY, undefined);
  assert.deepEqual(ok, { ok: true, path: BINARY, version: '0.1.0' });

  const dir = mkdtempSync(join(tmpdir(), 'conclave-bin-'));
  try {
    const missing = await checkBinary(join(dir, 'conclave'), undefined);
    assert.equal(missing.ok, false);
    assert.equal(!missing.ok && missing.reason, 'not_found');
    assert.match(!missing.ok ? missing.message : '', /does not exist.*conclave\.serverPath/);

    const onPath = await checkBinary('', undefined, { PATH: dir });
    assert.equal(!onPath.ok && onPath.reason, 'not_found');
    assert.match(!onPath.ok ? onPath.message : '', /not found on PATH/);
    assert.doesNotMatch(!onPath.ok ? onPath.message : '', /remote/i, 'a local window says nothing of remotes');
    const remote = await checkBinary(join(dir, 'conclave'), undefined, { PATH: dir }, undefined, 'ssh-remote');
    assert.match(
      !remote.ok ? remote.message : '',
      /remote window \(ssh-remote\).*Remote settings, not the User settings/,
      'in a remote window the message says where the setting must go',
    );

    const plain = join(dir, 'plain');
    writeFileSync(plain, 'not a program');
    chmodSync(plain, 0o644);
    const notExecutable = await checkBinary(plain, undefined);
    assert.equal(!notExecutable.ok && notExecutable.reason, 'not_executable');
    assert.match(!notExecutable.ok ? notExecutable.message : '', /chmod \+x/);

    const wrong = join(dir, 'wrong');
    writeFileSync(wrong, '#!/bin/sh\necho "oops" >&2\nexit 3\n');
    chmodSync(wrong, 0o755);
    const failing = await checkBinary(wrong, undefined);
    assert.equal(!failing.ok && failing.reason, 'version_failed');
    assert.match(!failing.ok ? failing.message : '', /--version` failed/);

    const relative = await checkBinary('./wrong', dir);
    assert.equal(!relative.ok && relative.reason, 'version_failed', 'relative paths resolve against the workspace');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('workspace/applyEdit from the real server: the edited document is the one to save before answering', async () => {
  const dir = scriptedWorkspace(
    [
      { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
      {
        match: 'Create a.txt',
        toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'via editor\n' } }],
      },
      { match: 'created a.txt', text: 'Wrote a.txt.' },
    ],
    [],
  );
  const edits: WorkspaceEditLike[] = [];
  let taskStatus: string | undefined;
  const server = await startServer(dir, {
    capabilities: {
      workspace: { applyEdit: true, workspaceEdit: { documentChanges: true, resourceOperations: ['create'] } },
      experimental: { conclave: { approvals: true, whiteboards: true, recoveryStatus: true } },
    },
    setup(connection) {
      connection.onNotification(lsp.taskUpdated, ({ task: t }) => {
        taskStatus = t.status;
      });
      connection.onRequest('workspace/applyEdit', (params: { edit: WorkspaceEditLike }) => {
        edits.push(params.edit);
        // What the extension does: apply, then save every edited document, then answer.
        const changes = params.edit.documentChanges ?? [];
        for (const change of changes) {
          if ('textDocument' in change) {
            const text = (change.edits[0] as { newText: string }).newText;
            writeFileSync(new URL(change.textDocument.uri), text);
          }
        }
        return { applied: true };
      });
    },
  });
  try {
    await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    await server.until('the task completed', () => taskStatus === 'completed');
    assert.equal(edits.length, 1, 'the write came as one workspace/applyEdit');
    const uri = fileUri(dir, 'a.txt');
    assert.deepEqual(editedUris(edits[0]), [uri], 'the document to save is a.txt (the CreateFile is not a text edit)');
    assert.deepEqual(edits[0].documentChanges?.[0], {
      kind: 'create',
      uri,
      options: { ignoreIfExists: true, overwrite: false },
    });
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a subtask names its assignee: the live agent, else the name it had (an agent from before a restart), else a short id', () => {
  const gone = '6f1c2d3e-0000-4000-8000-000000000001';
  const live = '6f1c2d3e-0000-4000-8000-000000000002';
  const tasks = new TasksModel((id) => (id === live ? 'bottom-1-2' : undefined));
  const subtask = (subtaskId: string, assignee: string, assigneeName?: string): lsp.SubtaskSummary => ({
    subtaskId,
    description: `Subtask ${subtaskId}`,
    assignee,
    assigneeName,
    status: 'completed',
    attempts: 1,
    files: [],
  });
  const summary = {
    ...task('running'),
    subtasks: [subtask('s1', gone, 'bottom-1-1'), subtask('s2', live), subtask('s3', gone)],
  };
  tasks.updateTask(summary);
  const described = summary.subtasks.map(
    (s) => tasks.row({ kind: 'subtask', task: tasks.task('t1')!, subtask: s }).description,
  );
  assert.deepEqual(described, [
    'completed · bottom-1-1 · 1 attempt',
    'completed · bottom-1-2 · 1 attempt',
    'completed · 6f1c2d3e · 1 attempt',
  ]);
});
