// Approvals and whiteboards against the real server, through the pure models: an escalation
// answered with abort, a dismissed one (null) that stays pending and is resolved later, a
// fileChange approval with its diff (approvals from the settings), and a live whiteboard.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc/node';
import * as lsp from '../src/lsp_ext';
import { presentApproval } from '../src/model/approvals';
import { initializationOptions } from '../src/model/settings';
import { StatusModel } from '../src/model/status';
import { TasksModel } from '../src/model/tasks';
import { WhiteboardStore } from '../src/model/whiteboards';
import { fileUri, scriptedWorkspace, startServer } from './harness';

const ESCALATING = [
  { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }, { description: 'Create c.txt' }] }) },
  { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
  { match: 'created a.txt', text: 'Wrote a.txt.' },
  { match: 'Create c.txt', error: 'unauthorized', repeat: true },
];

test('an escalation answered with abort: shown on top of the tasks model, modal, the task fails', async () => {
  const tasks = new TasksModel();
  const status = new StatusModel();
  const asked: lsp.ApprovalRequest[] = [];
  let topWhenAsked: string | undefined;
  const server = await startServer(scriptedWorkspace(ESCALATING), {
    setup(connection) {
      connection.onNotification(lsp.taskUpdated, ({ task }) => {
        tasks.updateTask(task);
        status.updateTask(task);
      });
      connection.onNotification(lsp.recoveryStatus, (event) => status.recovery(event));
      connection.onRequest(lsp.requestApproval, (approval) => {
        asked.push(approval);
        tasks.addApproval(approval);
        const top = tasks.roots()[0];
        topWhenAsked = top.kind === 'approval' ? top.approval.approvalId : undefined;
        const view = presentApproval(approval);
        const abort = view.buttons.find((b) => b.decision === 'abort')!;
        tasks.removeApproval(approval.approvalId);
        return { decision: abort.decision, note: 'not with these credentials' };
      });
    },
  });
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and c.txt' });
    await server.until('the task failed', () => tasks.task(taskId)?.status === 'failed');
    assert.equal(asked.length, 1, 'one approval was asked');
    const approval = asked[0];
    assert.equal(approval.kind, 'escalation');
    assert.equal(approval.taskId, taskId);
    assert.equal(topWhenAsked, approval.approvalId, 'the approval was the first row of the Tasks tree');
    const view = presentApproval(approval);
    assert.equal(view.modal, true, 'critical approvals are modal');
    assert.equal(view.showDiff, false);
    assert.deepEqual(
      view.buttons.map((b) => b.decision),
      ['retry', 'reassign', 'modify', 'abort'],
    );
    assert.deepEqual(tasks.pendingApprovals(), []);
    const byDescription = Object.fromEntries(tasks.task(taskId)!.subtasks.map((s) => [s.description, s.status]));
    assert.deepEqual(byDescription, { 'Create a.txt': 'completed', 'Create c.txt': 'failed' });
    assert.equal(status.render().text, 'Conclave: ✖ failed');
    assert.equal(status.render().taskId, taskId);
    assert.deepEqual(await server.connection.sendRequest(lsp.listApprovals, {}), { approvals: [] });
    const report = await server.connection.sendRequest(lsp.errorReport, { taskId });
    assert.match(report.path, /ERROR_REPORT\.md$/);
    assert.ok(existsSync(report.path));
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a dismissed approval stays pending: listed, on top of the tasks model, resolved later', async () => {
  const tasks = new TasksModel();
  const status = new StatusModel();
  let asked: lsp.ApprovalRequest | undefined;
  const server = await startServer(scriptedWorkspace(ESCALATING), {
    setup(connection) {
      connection.onNotification(lsp.taskUpdated, ({ task }) => {
        tasks.updateTask(task);
        status.updateTask(task);
      });
      connection.onNotification(lsp.recoveryStatus, (event) => status.recovery(event));
      connection.onRequest(lsp.requestApproval, (approval) => {
        asked = approval;
        tasks.addApproval(approval);
        return null; // the user closed the dialog
      });
    },
  });
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and c.txt' });
    await server.until('the approval asked', () => asked);
    await server.until('the task escalated', () => tasks.task(taskId)?.status === 'escalated');
    // The dismissal is not an answer: the server still lists it.
    const { approvals } = await server.connection.sendRequest(lsp.listApprovals, {});
    assert.equal(approvals.length, 1);
    assert.equal(approvals[0].approvalId, asked!.approvalId);
    tasks.setApprovals(approvals);
    const roots = tasks.roots();
    assert.equal(roots[0].kind, 'approval');
    assert.equal(roots[1].kind === 'task' && roots[1].task.taskId, taskId);
    const row = tasks.row(roots[0]);
    assert.equal(row.label, asked!.title);
    assert.match(row.description, /^escalation · critical · awaiting your answer$/);
    assert.equal(row.contextValue, 'approval');
    assert.match(status.render().text, /⚠ escalated/);
    assert.equal(status.render().kind, 'escalated');

    // A decision that is not an option is refused; then abort is accepted once.
    await assert.rejects(
      server.connection.sendRequest(lsp.resolveApproval, { approvalId: asked!.approvalId, decision: 'approve' }),
      (error: unknown) => error instanceof ResponseError && error.code === lsp.ErrorCodes.InvalidState,
    );
    const resolved = await server.connection.sendRequest(lsp.resolveApproval, {
      approvalId: asked!.approvalId,
      decision: 'abort',
    });
    assert.deepEqual(resolved, { accepted: true });
    tasks.removeApproval(asked!.approvalId);
    await server.until('the task failed', () => tasks.task(taskId)?.status === 'failed');
    assert.equal(tasks.roots()[0].kind, 'task');
    assert.deepEqual(await server.connection.sendRequest(lsp.listApprovals, {}), { approvals: [] });
    await assert.rejects(
      server.connection.sendRequest(lsp.resolveApproval, { approvalId: asked!.approvalId, decision: 'abort' }),
      (error: unknown) => error instanceof ResponseError && error.code === lsp.ErrorCodes.ApprovalNotFound,
    );
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('settings → initializationOptions: fileChanges "ask" gives a diff approval; untrusted denies commands', async () => {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
    { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'hello\n' } }] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
  ]);
  const resolved = initializationOptions({ llm: {}, approvals: { fileChanges: 'ask', commands: 'auto' } }, false);
  assert.deepEqual(resolved.initializationOptions, { approvals: { fileChanges: 'ask', commands: 'deny' } });
  assert.match(resolved.notice ?? '', /not trusted/);
  let taskStatus: string | undefined;
  let fileOnDiskWhenAsked: boolean | undefined;
  let asked: lsp.ApprovalRequest | undefined;
  const server = await startServer(dir, {
    initializationOptions: resolved.initializationOptions,
    setup(connection) {
      connection.onNotification(lsp.taskUpdated, ({ task }) => {
        taskStatus = task.status;
      });
      connection.onRequest(lsp.requestApproval, (approval) => {
        asked = approval;
        fileOnDiskWhenAsked = existsSync(join(dir, 'a.txt'));
        return { decision: 'approve' };
      });
    },
  });
  try {
    await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt' });
    await server.until('the task completed', () => taskStatus === 'completed');
    assert.ok(asked, 'a fileChange approval was asked');
    assert.equal(asked.kind, 'fileChange');
    assert.equal(fileOnDiskWhenAsked, false, 'nothing is written before approve');
    assert.deepEqual(asked.diff, { uri: fileUri(dir, 'a.txt'), before: '', after: 'hello\n' });
    const view = presentApproval(asked);
    assert.equal(view.showDiff, true, 'a fileChange approval opens the diff first');
    assert.deepEqual(
      view.buttons.map((b) => b.decision),
      ['approve', 'reject'],
    );
    assert.equal(view.modal, asked.severity === 'high' || asked.severity === 'critical');
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'hello\n');
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a whiteboard store follows subscribeWhiteboard + whiteboardChanged live, then unsubscribes', async () => {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
    { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
  ]);
  const store = new WhiteboardStore();
  const seen: number[] = [];
  let taskStatus: string | undefined;
  const server = await startServer(dir, {
    setup(connection) {
      connection.onNotification(lsp.whiteboardChanged, (board) => {
        if (board.id !== 'global') return;
        seen.push(board.version);
        if (store.isSubscribed(board.id)) store.apply(board);
      });
      connection.onNotification(lsp.taskUpdated, ({ task }) => {
        taskStatus = task.status;
      });
    },
  });
  try {
    assert.equal(store.opened('global'), true, 'the first document subscribes');
    const initial = await server.connection.sendRequest(lsp.subscribeWhiteboard, { id: 'global' });
    assert.equal(initial.id, 'global');
    store.apply(initial);
    const changes: string[] = [];
    store.onDidChange((id) => changes.push(id));

    await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt' });
    await server.until('the task completed', () => taskStatus === 'completed');
    const latest = await server.connection.sendRequest(lsp.readWhiteboard, { id: 'global' });
    await server.until('the store at the latest version', () => store.get('global')?.version === latest.version);
    assert.ok(latest.version > initial.version, 'the team wrote on the global board');
    assert.equal(store.content('global'), latest.content);
    assert.ok(changes.length >= 1 && changes.every((id) => id === 'global'));
    assert.deepEqual([...seen].sort((a, b) => a - b), seen, 'versions only go up');
    assert.equal(store.apply(initial), false, 'an older version is ignored');

    assert.ok(seen.length >= 1, 'whiteboardChanged arrived while the team worked');

    // Closing the document unsubscribes; an unknown board is 1003.
    assert.equal(store.closed('global'), true);
    assert.equal(store.isSubscribed('global'), false);
    assert.equal(await server.connection.sendRequest(lsp.unsubscribeWhiteboard, { id: 'global' }), null);
    await assert.rejects(
      server.connection.sendRequest(lsp.subscribeWhiteboard, { id: 'agent:00000000-0000-0000-0000-000000000000' }),
      (error: unknown) => error instanceof ResponseError && error.code === lsp.ErrorCodes.WhiteboardNotFound,
    );
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});
