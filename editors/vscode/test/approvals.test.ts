// Approvals and whiteboards against the real server, through the code the extension runs
// (ConclaveModels, ApprovalsModel, WhiteboardStore) with scripted prompts in place of the
// dialogs: an escalation answered, a dismissed one that stays pending and is answered later,
// one answered elsewhere while its prompt is open, a fileChange approval with its diff
// (approvals from the settings, untrusted workspace), and a live whiteboard.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc/node';
import type * as rpc from 'vscode-jsonrpc/node';
import * as lsp from '../src/lsp_ext';
import type { AnswerOutcome, ApprovalPresentation } from '../src/model/approvals';
import { ConclaveModels } from '../src/model/feed';
import { initializationOptions } from '../src/model/settings';
import { fileUri, recording, scriptedWorkspace, type Server, type StartOptions, startServer } from './harness';

const ESCALATING = [
  {
    match: 'Plan this task',
    text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }, { description: 'Create c.txt' }] }),
  },
  { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
  { match: 'created a.txt', text: 'Wrote a.txt.' },
  { match: 'Create c.txt', error: 'unauthorized', repeat: true },
];

type Prompt = (approval: lsp.ApprovalRequest, view: ApprovalPresentation) => Promise<lsp.ApprovalAnswer | undefined>;

/**
 * A server with the extension's models attached, conclave/requestApproval handled by
 * ApprovalsModel.onRequest with `prompt` standing in for the modal/notification.
 */
async function withModels(
  dir: string,
  prompt: Prompt,
  options: StartOptions = {},
): Promise<{ server: Server; models: ConclaveModels; outcomes: AnswerOutcome[]; responses: unknown[] }> {
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const outcomes: AnswerOutcome[] = [];
  const responses: unknown[] = [];
  models.approvals.onDidAnswer(({ outcome }) => outcomes.push(outcome));
  const server = await startServer(dir, {
    ...options,
    setup(c, poke) {
      models.attach(recording(c, () => poke()));
      c.onRequest(lsp.requestApproval, async (approval) => {
        const response = await models.approvals.onRequest(approval, prompt);
        responses.push(response);
        poke();
        return response;
      });
    },
  });
  connection = server.connection;
  return { server, models, outcomes, responses };
}

test('an escalation answered: first row of the Tasks tree while asked, modal, abort fails the subtask', async () => {
  let rowsWhenAsked: string[] = [];
  let asked: { approval: lsp.ApprovalRequest; view: ApprovalPresentation } | undefined;
  let models!: ConclaveModels;
  const started = await withModels(scriptedWorkspace(ESCALATING), async (approval, view) => {
    asked = { approval, view };
    rowsWhenAsked = models.tasks.roots().map((node) => models.tasks.row(node).id);
    // The user presses the "abort" button.
    return { decision: view.buttons.find((b) => b.decision === 'abort')!.decision, note: 'not with these credentials' };
  });
  const { server, outcomes, responses } = started;
  models = started.models;
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and c.txt' });
    await server.until('the task failed', () => models.tasks.task(taskId)?.status === 'failed');
    assert.ok(asked, 'the escalation was asked');
    const { approval, view } = asked;
    assert.equal(approval.kind, 'escalation');
    assert.equal(approval.severity, 'critical');
    assert.equal(approval.taskId, taskId);
    assert.equal(
      rowsWhenAsked[0],
      `approval:${approval.approvalId}`,
      'the approval was the first row of the Tasks tree',
    );
    assert.equal(rowsWhenAsked[1], `task:${taskId}`);
    assert.equal(view.modal, true, 'critical approvals are modal');
    assert.equal(view.showDiff, false);
    assert.deepEqual(
      view.buttons.map((b) => b.decision),
      ['retry', 'reassign', 'modify', 'abort'],
    );
    assert.deepEqual(outcomes, [{ kind: 'resolved' }], 'the server accepted the answer');
    await server.until('the request answered', () => responses.length === 1);
    assert.deepEqual(responses[0], { decision: 'abort', note: 'not with these credentials' });

    assert.deepEqual(models.tasks.pendingApprovals(), [], 'the answered approval left the tree');
    const subtasks = Object.fromEntries(models.tasks.task(taskId)!.subtasks.map((s) => [s.description, s.status]));
    assert.deepEqual(subtasks, { 'Create a.txt': 'completed', 'Create c.txt': 'failed' });
    assert.equal(models.status.render().text, 'Conclave: ✖ failed');
    assert.equal(models.status.render().taskId, taskId, 'a click on the status bar reveals the failed task');
    assert.deepEqual(await server.connection.sendRequest(lsp.listApprovals, {}), { approvals: [] });

    // Show Error Report.
    const report = await server.connection.sendRequest(lsp.errorReport, { taskId });
    assert.match(report.path, /ERROR_REPORT\.md$/);
    assert.ok(existsSync(report.path));
    assert.match(report.markdown, /Create c\.txt/);
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a dismissed approval stays pending: first row of the tree, escalated status, answered later', async () => {
  let asked: lsp.ApprovalRequest | undefined;
  const { server, models, outcomes, responses } = await withModels(scriptedWorkspace(ESCALATING), async (approval) => {
    asked = approval;
    return undefined; // the user closed the dialog
  });
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and c.txt' });
    await server.until('the dismissal answered', () => responses.length === 1);
    assert.equal(responses[0], null, 'a dismissal answers null');
    assert.deepEqual(outcomes, [], 'nothing was decided');
    await server.until('the task escalated', () => models.tasks.task(taskId)?.status === 'escalated');

    // Still pending on the server, and after a refresh (Show Pending Approvals, a reload).
    await models.refresh();
    const pending = models.tasks.pendingApprovals();
    assert.deepEqual(
      pending.map((a) => a.approvalId),
      [asked!.approvalId],
    );
    const roots = models.tasks.roots();
    assert.equal(roots[0].kind, 'approval');
    assert.equal(roots[1].kind === 'task' && roots[1].task.taskId, taskId);
    const row = models.tasks.row(roots[0]);
    assert.equal(row.label, asked!.title);
    assert.equal(row.description, 'escalation · critical · awaiting your answer');
    assert.equal(row.contextValue, 'approval');
    assert.match(models.status.render().text, /^Conclave: ⚠ escalated · [\d.]+k? tokens$/);
    assert.equal(models.status.render().taskId, taskId);

    // Answered later from the tree: a decision that is not an option is refused and the
    // approval stays; abort is accepted; answering again says it is gone.
    const refused = await models.approvals.answer(pending[0], { decision: 'approve' });
    assert.equal(refused.kind, 'failed');
    assert.equal(models.tasks.pendingApprovals().length, 1, 'a refused answer leaves it pending');
    assert.deepEqual(await models.approvals.answer(pending[0], { decision: 'abort' }), { kind: 'resolved' });
    assert.deepEqual(models.tasks.pendingApprovals(), []);
    await server.until('the task failed', () => models.tasks.task(taskId)?.status === 'failed');
    assert.deepEqual(await server.connection.sendRequest(lsp.listApprovals, {}), { approvals: [] });
    const again = await models.approvals.answer(pending[0], { decision: 'abort' });
    assert.equal(again.kind, 'gone');
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('an approval answered elsewhere while its prompt is open: the late answer is "already answered"', async () => {
  let asked: lsp.ApprovalRequest | undefined;
  let release!: (answer: lsp.ApprovalAnswer) => void;
  const { server, models, outcomes } = await withModels(scriptedWorkspace(ESCALATING), (approval) => {
    asked = approval;
    return new Promise((resolvePrompt) => (release = resolvePrompt));
  });
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and c.txt' });
    await server.until('the prompt open', () => asked);
    // Show Pending Approvals (or another editor) answers first.
    assert.deepEqual(await models.approvals.answer(asked!, { decision: 'abort' }), { kind: 'resolved' });
    await server.until('the task failed', () => models.tasks.task(taskId)?.status === 'failed');
    // Then the user presses "Retry" in the prompt still on screen.
    release({ decision: 'retry' });
    await server.until('the late answer handled', () => outcomes.length === 2);
    assert.equal(outcomes[1].kind, 'gone');
    assert.deepEqual(models.tasks.pendingApprovals(), []);
    assert.equal(models.tasks.task(taskId)!.status, 'failed', 'the first answer stands');
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
  let fileOnDiskWhenAsked: boolean | undefined;
  let asked: { approval: lsp.ApprovalRequest; view: ApprovalPresentation } | undefined;
  const { server, models, outcomes } = await withModels(
    dir,
    async (approval, view) => {
      asked = { approval, view };
      fileOnDiskWhenAsked = existsSync(join(dir, 'a.txt'));
      return { decision: 'approve' };
    },
    { initializationOptions: resolved.initializationOptions },
  );
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    await server.until('the task completed', () => models.tasks.task(taskId)?.status === 'completed');
    assert.ok(asked, 'a fileChange approval was asked');
    const { approval, view } = asked;
    assert.equal(approval.kind, 'fileChange');
    assert.equal(fileOnDiskWhenAsked, false, 'nothing is written before approve');
    assert.deepEqual(approval.diff, { uri: fileUri(dir, 'a.txt'), before: '', after: 'hello\n' });
    assert.equal(view.showDiff, true, 'a fileChange approval opens the diff first');
    assert.deepEqual(
      view.buttons.map((b) => b.decision),
      ['approve', 'reject'],
    );
    assert.equal(view.modal, approval.severity === 'high' || approval.severity === 'critical');
    assert.deepEqual(outcomes, [{ kind: 'resolved' }]);
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'hello\n');
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a whiteboard followed live (subscribe + whiteboardChanged), then closed (unsubscribe: no more changes)', async () => {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
    { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    {
      match: ['Plan this task', 'Create b.txt'],
      text: JSON.stringify({ subtasks: [{ description: 'Create b.txt' }] }),
    },
    { match: 'Create b.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'b.txt', content: 'b\n' } }] },
    { match: 'created b.txt', text: 'Wrote b.txt.' },
  ]);
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const store = models.whiteboards;
  const notified: number[] = [];
  const server = await startServer(dir, {
    setup(c, poke) {
      models.attach(
        recording(c, (method, params) => {
          if (method === lsp.whiteboardChanged.method && (params as lsp.Whiteboard).id === 'global') {
            notified.push((params as lsp.Whiteboard).version);
          }
          poke();
        }),
      );
    },
  });
  connection = server.connection;
  try {
    // Opening the document subscribes; what the document shows is the store's content.
    const initial = await store.open(server.connection, 'global');
    assert.equal(initial.id, 'global');
    assert.equal(store.isSubscribed('global'), true);
    assert.equal(store.content('global'), initial.content);
    const shown: number[] = [];
    store.onDidChange((id) => shown.push(store.get(id)!.version));

    const first = await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    await server.until('the task completed', () => models.tasks.task(first.taskId)?.status === 'completed');
    const latest = await server.connection.sendRequest(lsp.readWhiteboard, { id: 'global' });
    assert.ok(latest.version > initial.version, 'the team wrote on the global board');
    await server.until('the document at the latest version', () => store.get('global')?.version === latest.version);
    assert.equal(store.content('global'), latest.content);
    assert.ok(notified.length >= 1, 'conclave/whiteboardChanged arrived while the team worked');
    assert.ok(notified[0] > initial.version);
    for (let i = 1; i < notified.length; i++) assert.ok(notified[i] > notified[i - 1], `versions go up: ${notified}`);
    assert.deepEqual(shown, notified, 'the document changed once per notification');
    assert.equal(store.apply(initial), false, 'an older version is ignored');

    // Closing the last tab unsubscribes: the next task's changes to it are not sent any more.
    // Control: layer:top stays followed and changes when a task completes.
    await store.open(server.connection, 'layer:top');
    await store.close(server.connection, 'global');
    assert.equal(store.isSubscribed('global'), false);
    const seen = notified.length;
    const second = await server.connection.sendRequest(lsp.submitTask, { description: 'Create b.txt' });
    await server.until('the second task completed', () => models.tasks.task(second.taskId)?.status === 'completed');
    const finished = Date.now();
    const [after, top] = await Promise.all([
      server.connection.sendRequest(lsp.readWhiteboard, { id: 'global' }),
      server.connection.sendRequest(lsp.readWhiteboard, { id: 'layer:top' }),
    ]);
    assert.ok(after.version > latest.version, 'the global board changed again');
    await server.until(
      'the followed control board at its latest version',
      () => store.get('layer:top')?.version === top.version,
    );
    // Proving an absence takes a window: changes are coalesced to one per board every 50 ms,
    // so a subscribed board's last change is sent within 50 ms; allow four times that.
    await new Promise((done) => setTimeout(done, Math.max(0, finished + 200 - Date.now())));
    assert.deepEqual(notified.slice(seen), [], 'no whiteboardChanged for global after unsubscribe');
    assert.equal(store.get('global'), undefined);
    await store.close(server.connection, 'layer:top');

    // An unknown board is 1003 and leaves no subscription behind.
    await assert.rejects(
      store.open(server.connection, 'agent:00000000-0000-0000-0000-000000000000'),
      (error: unknown) => error instanceof ResponseError && error.code === lsp.ErrorCodes.WhiteboardNotFound,
    );
    assert.deepEqual(store.subscribed(), []);
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('an approval withdrawn by the server (its task cancelled) leaves the Tasks tree with the reason', async () => {
  const dir = scriptedWorkspace(
    [
      { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
      { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
      { match: 'created a.txt', text: 'Wrote a.txt.' },
    ],
    ['writes = "disk"', '[approvals]', 'fileChanges = "ask"'],
  );
  // The person never answers: the prompt is dismissed, the approval stays pending.
  const { server, models } = await withModels(dir, async () => undefined);
  const resolved: lsp.ApprovalResolvedParams[] = [];
  models.onApprovalResolved((params) => resolved.push(params));
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    await server.until('the file change pending in the tree', () => models.tasks.pendingApprovals().length === 1);
    const [approval] = models.tasks.pendingApprovals();
    assert.equal(approval.kind, 'fileChange');
    await server.connection.sendRequest(lsp.cancelTask, { taskId });
    await server.until('the approval withdrawn', () => resolved.length === 1);
    assert.equal(resolved[0].approvalId, approval.approvalId);
    assert.equal(resolved[0].decision, null, 'withdrawn, not answered');
    assert.ok(resolved[0].reason, 'the server says why');
    assert.deepEqual(models.tasks.pendingApprovals(), [], 'no longer pending in the tree');
    assert.ok(!existsSync(join(dir, 'a.txt')), 'nothing was written');
  } finally {
    server.dispose();
  }
});
