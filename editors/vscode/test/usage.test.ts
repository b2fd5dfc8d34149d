// What a task cost and how it was checked, as a person sees it: tokens and cost on the task
// row, the agents' rows and in the status bar, the Checks node with each check's status and
// rule ids, a failed check's output as a document, and the token-limit approval saying what
// was spent. The pure formatting first, then the real server on a scripted model with a price.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as rpc from 'vscode-jsonrpc/node';
import * as lsp from '../src/lsp_ext';
import { agentStatusLabel } from '../src/model/agents';
import { presentApproval } from '../src/model/approvals';
import { checkDocument, checkPath, parseCheckPath } from '../src/model/checks';
import { TaskDetails } from '../src/model/details';
import { ConclaveModels } from '../src/model/feed';
import { StatusModel } from '../src/model/status';
import { type TaskTreeNode, TasksModel } from '../src/model/tasks';
import { formatCost, formatTokens, usageLabel } from '../src/model/usage';
import { recording, scriptedWorkspace, type Server, startServer } from './harness';

const AT = '2026-01-01T00:00:00Z';
const PRICED = ['writes = "disk"', '[pricing."scripted"]', 'input = 1.0', 'output = 2.0'];

function usage(input: number, output: number, costUsd: number | null): lsp.TokenUsage {
  return { inputTokens: input, outputTokens: output, calls: 3, costUsd };
}

function task(id: string, status: lsp.TaskStatus, extra: Partial<lsp.TaskSummary> = {}): lsp.TaskSummary {
  return {
    taskId: id,
    title: `Task ${id}`,
    status,
    progress: 40,
    createdAt: AT,
    updatedAt: AT,
    subtasks: [],
    recovery: null,
    ...extra,
  };
}

test('tokens and cost read as people read them', () => {
  assert.deepEqual([0, 812, 1000, 1234, 12_345, 99_999, 123_456, 999_999, 1_500_000].map(formatTokens), [
    '0',
    '812',
    '1k',
    '1.2k',
    '12.3k',
    '100k',
    '123k',
    '1M',
    '1.5M',
  ]);
  assert.deepEqual([0, 0.0042, 0.42, 12.345].map(formatCost), ['$0.0000', '$0.0042', '$0.4200', '$12.35']);
  assert.equal(usageLabel(usage(12_000, 345, 0.0042)), '12.3k tokens · $0.0042');
  assert.equal(usageLabel(usage(800, 12, null)), '812 tokens', 'no price: no cost, never "$0"');
});

test('the task row, the status bar and the agents show tokens and cost; a check row its rules', () => {
  const tasks = new TasksModel();
  const status = new StatusModel();
  const running = task('t1', 'running', { usageTotal: usage(10_000, 2_345, 0.0123) });
  const other = task('t2', 'running', { usageTotal: usage(1_000, 0, 0.001), createdAt: '2026-01-01T00:00:01Z' });
  const done = task('t3', 'completed', { usageTotal: usage(500, 20, null), createdAt: '2026-01-01T00:00:02Z' });
  for (const t of [running, other, done]) {
    tasks.updateTask(t);
    status.updateTask(t);
  }
  const row = tasks.row({ kind: 'task', task: running });
  assert.equal(row.description, 'running · 40% · 12.3k tokens · $0.0123');
  assert.match(row.tooltip, /Tokens: 10,000 in · 2,345 out · 3 calls · \$0\.0123/);
  assert.equal(tasks.row({ kind: 'task', task: done }).description, 'completed · 100% · 520 tokens');
  assert.match(tasks.row({ kind: 'task', task: done }).tooltip, /cost unknown: the model has no \[pricing\] entry/);
  // The status bar adds up the unfinished tasks only.
  assert.equal(status.render().text, 'Conclave: 2 running · 13.3k tokens · $0.0133');

  // The Checks node: counted from the summary, its rows from the task's detail.
  const checked = task('t4', 'failed', {
    checkCounts: { passed: 1, failed: 1, skipped: 0, failedRules: ['python.stub'], at: AT },
    subtasks: [{ subtaskId: 's1', description: 'Write hello.py', assignee: null, status: 'failed', attempts: 1 }],
  });
  const failedCheck: lsp.CheckResult = {
    kind: 'stubs',
    name: 'stub scan',
    status: 'failed',
    files: ['hello.py'],
    detail: 'hello.py:1: `greet` has no body but `pass`',
    subtaskId: 's1',
    at: AT,
    rules: ['python.stub'],
  };
  const passedCheck: lsp.CheckResult = {
    kind: 'syntax',
    name: 'python3 -m py_compile hello.py',
    status: 'passed',
    files: ['hello.py'],
    detail: '',
    subtaskId: null,
    at: AT,
    rules: ['syntax.python'],
  };
  const detail: lsp.TaskDetail = {
    ...checked,
    description: 'Write hello.py',
    filesWritten: [],
    result: null,
    partialResults: [],
    errors: [],
    checks: [passedCheck, failedCheck],
  };
  const withDetail = new TasksModel(undefined, (id) => (id === 't4' ? detail : undefined));
  withDetail.updateTask(checked);
  const [root] = withDetail.roots();
  const children = withDetail.children(root);
  assert.deepEqual(
    children.map((n) => n.kind),
    ['subtask', 'checks'],
  );
  const checksRow = withDetail.row(children[1]);
  assert.equal(checksRow.label, 'Checks');
  assert.equal(checksRow.description, '1 passed · 1 failed [python.stub]');
  assert.equal(checksRow.collapsed, false, 'a failure is shown at once');
  const rows = withDetail.children(children[1]).map((n) => withDetail.row(n));
  assert.deepEqual(
    rows.map((r) => [r.label, r.description, r.icon, r.contextValue]),
    [
      ['python3 -m py_compile hello.py', 'passed · syntax · syntax.python', 'pass', 'check.passed'],
      ['stub scan', 'failed · stubs · python.stub', 'error', 'check.failed'],
    ],
  );
  assert.match(rows[1].tooltip, /has no body but `pass`/);
  const checkNode = withDetail.children(children[1])[1] as Extract<TaskTreeNode, { kind: 'check' }>;
  assert.deepEqual(withDetail.parent(checkNode), { kind: 'checks', task: checked });

  // Its output as a document: which task and subtask, the rules, the output whole.
  const path = checkPath('t4', 1, failedCheck);
  assert.deepEqual(parseCheckPath(path), { taskId: 't4', index: 1 });
  const text = checkDocument(detail, failedCheck);
  assert.match(text, /^stub scan — failed\n/);
  assert.match(text, /Checked: the subtask "Write hello.py"/);
  assert.match(text, /Rules: python\.stub/);
  assert.match(text, /Output:\n\nhello\.py:1: `greet` has no body but `pass`\n$/);
});

/** A server with the extension's models attached; approvals answered by `answer`. */
async function withModels(
  dir: string,
  answer: (approval: lsp.ApprovalRequest) => lsp.ApprovalAnswer | null = () => null,
  initializationOptions?: object,
): Promise<{ server: Server; models: ConclaveModels; asked: lsp.ApprovalRequest[] }> {
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const asked: lsp.ApprovalRequest[] = [];
  const server = await startServer(dir, {
    initializationOptions,
    setup(c, poke) {
      models.attach(recording(c, () => poke()));
      c.onRequest(lsp.requestApproval, (approval) => {
        asked.push(approval);
        models.tasks.addApproval(approval);
        poke();
        return answer(approval);
      });
    },
  });
  connection = server.connection;
  await models.refresh();
  return { server, models, asked };
}

// hello.py's greet() promises a value and returns none: the stub and contract checks fail,
// the model has no fix, and the task fails with its checks' findings.
const STUB = 'def greet():\n    """Return the greeting."""\n    pass\n';
const FAILING_CHECKS = [
  { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Write hello.py' }] }) },
  { match: 'Write hello.py', toolCalls: [{ name: 'file_write', arguments: { path: 'hello.py', content: STUB } }] },
  { match: 'created hello.py', text: 'Wrote hello.py.' },
  { text: 'I cannot fix it.', repeat: true },
];

test('a task on a priced model: tokens and cost live, the failed checks with their rules and output, agents by task', async () => {
  const dir = scriptedWorkspace(FAILING_CHECKS, [
    ...PRICED,
    '[verify]',
    'acceptanceTests = false',
    'maxRounds = 1',
    '[approvals]',
    'commands = "auto"',
  ]);
  // No retries: the failure ends the task at once (the ladder is another test's subject).
  const once = { maxRetries: 0, baseDelayMs: 10 };
  const { server, models } = await withModels(
    dir,
    (approval) => ({ decision: approval.options.some((o) => o.id === 'abort') ? 'abort' : approval.options[0].id }),
    { recovery: { severity: { low: once, medium: once, high: once } } },
  );
  const { tasks, status, agents } = models;
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, {
      description: 'Write hello.py with greet()',
    });
    const rowOf = () => tasks.row({ kind: 'task', task: tasks.task(taskId)! });

    // Live, while the task runs: its row and the status bar say what it spent so far.
    const live = await server.until('tokens on the running task', () => {
      const t = tasks.task(taskId);
      return t && !['failed', 'completed', 'cancelled'].includes(t.status) && t.usageTotal
        ? rowOf().description
        : undefined;
    });
    assert.match(live, / · [\d.]+k? tokens · \$0\.\d{4}$/);
    assert.match(status.render().text, /^Conclave: .*[\d.]+k? tokens · \$0\.\d{4}/);

    const failed = await server.until(
      'the task to fail its checks',
      () => tasks.task(taskId)?.status === 'failed' && tasks.task(taskId),
    );
    const detail = await server.connection.sendRequest(lsp.getTask, { taskId });
    assert.deepEqual(failed.usageTotal, detail.usage!.total, 'the row shows the whole task');
    assert.equal(rowOf().description.endsWith(usageLabel(detail.usage!.total)), true, rowOf().description);
    assert.equal(status.render().text, 'Conclave: ✖ failed', 'nothing runs: no running total');

    // The Checks node under the task: counted, with the rules of the failures.
    const taskNode: TaskTreeNode = { kind: 'task', task: failed };
    const checksNode = tasks.children(taskNode).find((n) => n.kind === 'checks');
    assert.ok(checksNode, 'a Checks node under the task');
    const checksRow = tasks.row(checksNode);
    const passed = detail.checks!.filter((c) => c.status === 'passed').length;
    assert.ok(passed > 0, 'the syntax check passed');
    assert.equal(checksRow.description, `${passed} passed · 2 failed [python.stub, python.unkept-return]`);
    // Opened: the tree fetches the detail, then each check is a row.
    await models.details.ensure(taskId);
    const checkNodes = tasks
      .children(checksNode)
      .filter((n): n is Extract<TaskTreeNode, { kind: 'check' }> => n.kind === 'check');
    const rows = checkNodes.map((n) => tasks.row(n));
    assert.equal(rows.length, detail.checks!.length);
    const descriptions = rows.map((r) => r.description);
    assert.ok(descriptions.includes('passed · syntax · syntax.python'), `${descriptions}`);
    assert.deepEqual(
      descriptions.filter((d) => d.startsWith('failed')),
      ['failed · stubs · python.stub', 'failed · contracts · python.unkept-return'],
    );
    // One click on a failed check: its whole output.
    const stub = checkNodes.find((n) => n.check.kind === 'stubs')!;
    const text = checkDocument(models.details.get(taskId)!, stub.check);
    assert.match(text, /^stub scan — failed\n/);
    assert.match(text, /Rules: python\.stub/);
    assert.ok(text.includes(stub.check.detail.trim()) && stub.check.detail.trim().length > 0, text);
    assert.match(text, /hello\.py/);

    // The agents: what each spent on the task selected in the tree, summed over the team.
    models.selectTask(taskId);
    await server.until('the agents to show the task', () => agents.usageScope() === `tokens on “${failed.title}”`);
    const byAgent = detail.usage!.byAgent;
    const spenders = agents.all().filter((a) => byAgent[a.agentId]);
    assert.ok(spenders.length >= 2, 'the mid and a bottom agent used tokens');
    for (const agent of spenders) {
      const row = agents.row({ kind: 'agent', agent });
      assert.ok(
        row.description.startsWith(`${agentStatusLabel(agent.status)} · ${usageLabel(byAgent[agent.agentId])} · `),
        row.description,
      );
      assert.match(agents.tooltip(agent.agentId), /Tokens on “.*”: [\d,]+ in · [\d,]+ out/);
    }
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('the token-limit approval says what the task spent, in the notification and the tree', async () => {
  const dir = scriptedWorkspace(
    [
      { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
      { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
      { match: 'created a.txt', text: 'Wrote a.txt.' },
    ],
    [...PRICED, '[limits]', 'maxTokensPerTask = 10'],
  );
  const { server, models, asked } = await withModels(dir);
  try {
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    const approval = await server.until('the token-limit approval', () =>
      asked.find((a) => a.title.startsWith('Token limit reached')),
    );
    assert.equal(approval.taskId, taskId);
    const spent = models.tasks.task(taskId)?.usageTotal;
    assert.ok(spent, 'the task row has its usage');

    // The notification: its title and what was spent, in tokens and dollars, with the choice.
    const view = presentApproval(approval);
    assert.equal(view.modal, false);
    assert.match(view.message, /^Conclave \(decision, medium\): Token limit reached: \d+ of 10 tokens — /);
    assert.match(
      view.message,
      /has used \d+ \([\d,]+ in · [\d,]+ out · \d+ calls? · \$0\.\d{4}\), reaching its limit of 10 tokens/,
    );
    assert.deepEqual(
      view.buttons.map((b) => b.title),
      ['Approve', 'Abort'],
    );
    assert.match(view.detail, /Approve: continue \(limit \d+ tokens\) · Abort: cancel the task/);
    // The pending row on top of the tree has it in its tooltip.
    const row = models.tasks.row(models.tasks.roots()[0]);
    assert.equal(row.label, approval.title);
    assert.match(row.tooltip, /\$0\.\d{4}/);

    // Cancel the task from it.
    await models.approvals.answer(approval, { decision: 'abort' });
    await server.until('the task cancelled', () => models.tasks.task(taskId)?.status === 'cancelled');
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a detail fetched again after the connection went away ends quietly, without an unhandled rejection', async () => {
  const summary = (calls: number) =>
    ({
      taskId: 't',
      status: 'running',
      usageTotal: { inputTokens: calls, outputTokens: 0, calls, costUsd: null },
    }) as unknown as lsp.TaskSummary;
  let disposed = false;
  let answer: ((detail: lsp.TaskDetail) => void) | undefined;
  const requester = {
    sendRequest(): Promise<unknown> {
      // As vscode-jsonrpc does once its connection is disposed: throw, not reject.
      if (disposed) throw new Error('Connection is disposed.');
      return new Promise((resolve) => (answer = resolve));
    },
  };
  const details = new TaskDetails(() => requester as never);
  const unhandled: unknown[] = [];
  const hear = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', hear);
  try {
    const first = details.ensure('t');
    details.summaryChanged(summary(2)); // moved while in flight: one more fetch follows
    disposed = true;
    answer?.({ ...summary(1), subtasks: [] } as unknown as lsp.TaskDetail);
    await first;
    await new Promise((done) => setTimeout(done, 10));
    assert.deepEqual(unhandled, []);
    assert.equal(details.get('t')?.usageTotal?.calls, 1, 'the detail that arrived is kept');
  } finally {
    process.off('unhandledRejection', hear);
  }
});
