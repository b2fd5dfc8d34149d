// Submitting a task to the real server and following it in the pure models: the Tasks tree
// (statuses, assignees, attempts, files being generated, the top agent's final report), the
// status bar during a retry and at the end, and the Agents tree from listAgents + agentStatus.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import * as lsp from '../src/lsp_ext';
import type * as rpc from 'vscode-jsonrpc/node';
import { ConclaveModels } from '../src/model/feed';
import { reportDocument } from '../src/model/report';
import type { TaskTreeNode } from '../src/model/tasks';
import { CLIENT_CAPABILITIES, fileUri, recording, scriptedWorkspace, startServer } from './harness';

const PLAN = JSON.stringify({ subtasks: [{ description: 'Create a.txt' }, { description: 'Create b.txt' }] });

test('handshake: experimental capabilities both ways, serverInfo, shutdown + exit', async () => {
  const server = await startServer(scriptedWorkspace([]));
  try {
    assert.deepEqual(server.initializeResult.capabilities.experimental?.conclave, {
      protocolVersion: lsp.PROTOCOL_VERSION,
    });
    assert.equal(server.initializeResult.serverInfo?.name, 'conclave');
    assert.match(server.initializeResult.serverInfo?.version ?? '', /^\d+\.\d+\.\d+/);
    const { tasks } = await server.connection.sendRequest(lsp.listTasks, {});
    assert.deepEqual(tasks, []);
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('a task with a retried subtask: tasks model, files being generated, status bar and final report, live and at the end', async () => {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: PLAN },
    { match: 'Create a.txt', toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    { match: 'Create b.txt', error: { kind: 'http', status: 400 }, times: 1 },
    {
      match: 'Create b.txt',
      delayMs: 700,
      toolCalls: [{ name: 'file_write', arguments: { path: 'b.txt', content: 'b\n' } }],
    },
    // Slow after the write, so "b.txt is being generated" can be observed.
    { match: 'created b.txt', delayMs: 700, text: 'Wrote b.txt.' },
  ]);
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const { agents, tasks, status } = models;
  const recoveries: lsp.RecoveryEvent[] = [];
  models.onRecovery((event) => recoveries.push(event));
  const server = await startServer(dir, {
    setup(c) {
      models.attach(c);
    },
  });
  connection = server.connection;
  try {
    // What the extension does once the client runs: listTasks, listApprovals, listAgents.
    await models.refresh();
    assert.ok(agents.all().length > 0, 'the team is listed');
    assert.deepEqual(tasks.roots(), []);
    assert.equal(status.render().text, 'Conclave: idle');

    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Make a.txt and b.txt' });
    const subtaskOf = (description: string) => tasks.task(taskId)?.subtasks.find((s) => s.description === description);
    const rowOf = (description: string) => {
      const task = tasks.task(taskId);
      const subtask = subtaskOf(description);
      return task && subtask ? tasks.row({ kind: 'subtask', task, subtask }) : undefined;
    };

    // The task is the tree's only root, with both subtasks under it.
    const roots = await server.until('the task in the tree', () => {
      const r = tasks.roots();
      return r.length === 1 && r[0].kind === 'task' && r[0].task.subtasks.length === 2 ? r : undefined;
    });
    assert.equal(roots[0].kind === 'task' && roots[0].task.taskId, taskId);
    assert.deepEqual(
      tasks.children(roots[0]).map((n: TaskTreeNode) => n.kind === 'subtask' && n.subtask.description),
      ['Create a.txt', 'Create b.txt'],
    );

    // During the retry: the status bar says so, the subtask shows recovering with 2 attempts.
    const retryText = await server.until('the retry in the status bar', () => {
      const view = status.render();
      return view.kind === 'retry' ? view.text : undefined;
    });
    // What the running task spent so far (its plan) comes right after how many run.
    assert.match(retryText, /^Conclave: 1 running · [\d.]+k? tokens · ↻ retry 1\/\d+( in \d+ s)?$/);
    assert.equal(status.render().taskId, taskId, 'a click on the status bar reveals the retried task');
    const retry = recoveries.find((e) => e.action === 'retry');
    assert.ok(retry, 'a conclave/recoveryStatus retry was sent');
    assert.equal(retry.taskId, taskId);
    assert.equal(tasks.task(taskId)!.status, 'recovering');
    const recoveringRow = await server.until('b.txt recovering on its second attempt', () => {
      const row = rowOf('Create b.txt');
      return row && subtaskOf('Create b.txt')!.attempts === 2 ? row : undefined;
    });
    assert.equal(recoveringRow.icon, 'refresh');
    const assignee = subtaskOf('Create b.txt')!.assignee!;
    assert.ok(assignee, 'b.txt has an assignee');
    assert.equal(recoveringRow.description, `recovering · ${agents.name(assignee)} · 2 attempts`);
    assert.match(agents.name(assignee)!, /^bottom-/);

    // The file being written by the recovering subtask is marked as being generated.
    const bUri = fileUri(dir, 'b.txt');
    await server.until('b.txt marked as being generated', () => tasks.filesBeingGenerated().has(bUri));
    assert.equal(tasks.filesBeingGenerated().has(fileUri(dir, 'a.txt')), false, 'a.txt is finished');

    // The end: completed, attempts 1 and 2, nothing being generated, status bar idle.
    await server.until('the task completed', () => tasks.task(taskId)?.status === 'completed');
    const done = tasks.task(taskId)!;
    assert.equal(done.progress, 100);
    assert.deepEqual(
      done.subtasks.map((s) => [s.description, s.status, s.attempts]),
      [
        ['Create a.txt', 'completed', 1],
        ['Create b.txt', 'completed', 2],
      ],
    );
    for (const s of done.subtasks) assert.ok(s.assignee, `${s.description} has an assignee`);
    assert.equal(
      rowOf('Create a.txt')!.description,
      `completed · ${agents.name(subtaskOf('Create a.txt')!.assignee!)} · 1 attempt`,
    );
    // No [pricing] for the model: tokens, and no cost.
    assert.match(tasks.row({ kind: 'task', task: done }).description, /^completed · 2\/2 · 100% · [\d.]+k? tokens$/);
    assert.equal(tasks.filesBeingGenerated().size, 0);
    assert.equal(status.render().text, 'Conclave: idle');
    assert.equal(status.render().kind, 'idle');
    assert.ok(recoveries.some((e) => e.action === 'recovered' && e.taskId === taskId));
    assert.equal(readFileSync(join(dir, 'b.txt'), 'utf8'), 'b\n');
    assert.ok(existsSync(join(dir, 'a.txt')));

    // Show Task Log: the server's history mentions the retry.
    const log = await server.connection.sendRequest(lsp.taskLog, { taskId });
    assert.equal(log.taskId, taskId);
    assert.match(log.text, /retry/);
    // The top agent's final report follows the task's end: in its detail and its log.
    let detail: lsp.TaskDetail | undefined;
    for (let i = 0; i < 200 && !detail?.finalReport; i++) {
      detail = await server.connection.sendRequest(lsp.getTask, { taskId });
      if (!detail.finalReport) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(detail?.finalReport, 'the task has a final report');
    assert.match(detail.finalReport.by, /^top-/);
    assert.equal(detail.finalReport.text.split('\n')[0], 'The task completed: 2 of 2 subtasks completed.');
    const withReport = await server.connection.sendRequest(lsp.taskLog, { taskId });
    assert.match(withReport.text, /report +top-\S+ +final report: The task completed: 2 of 2 subtasks completed\./);
    assert.match(withReport.text, /progress_report → top-\S+: subtask 2 of 2 "Create b\.txt" completed/);

    // The Tasks tree shows the report first under the finished task, headed by the top agent
    // who wrote it, and opens it whole as a Markdown document. The tree fetches a finished
    // task's detail when it opens the task; one fetched as the task ended, before the report
    // was written, is fetched again on the report's own conclave/taskUpdated.
    const report = detail.finalReport;
    void models.details.ensure(taskId);
    const taskNode: TaskTreeNode = { kind: 'task', task: done };
    const reportNode = await server.until('the final report under the task', () =>
      tasks.children(taskNode).find((n) => n.kind === 'report'),
    );
    // The outcome first, then the subtasks (and the checks, when some ran).
    assert.deepEqual(
      tasks
        .children(taskNode)
        .map((n) => n.kind)
        .slice(0, 3),
      ['report', 'subtask', 'subtask'],
    );
    assert.equal(tasks.parent(reportNode)?.kind, 'task');
    const reportRow = tasks.row(reportNode);
    assert.equal(reportRow.label, `Final report by ${report.by}`);
    assert.equal(reportRow.description, 'The task completed: 2 of 2 subtasks completed.');
    assert.equal(reportRow.icon, 'report');
    assert.ok(reportRow.tooltip.startsWith(`Final report by ${report.by}, `), reportRow.tooltip);
    assert.ok(reportRow.tooltip.includes(report.text.trim().split('\n').slice(0, 3).join('\n')), reportRow.tooltip);
    // Hovering the task says it too.
    assert.match(
      tasks.row(taskNode).tooltip,
      /^Final report by top-\S+: The task completed: 2 of 2 subtasks completed\.$/m,
    );
    const document = reportDocument(models.details.get(taskId)!);
    assert.equal(document.split('\n')[0], `# Final report by ${report.by}`);
    assert.match(document, /^On the task "Make a\.txt and b\.txt" \(completed\), written /m);
    assert.ok(document.includes(`\n\n${report.text.trim()}\n`), document);

    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('agents model: listAgents by layer, live status from agentStatus, metrics tooltip', async () => {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Create a.txt' }] }) },
    {
      match: 'Create a.txt',
      delayMs: 500,
      toolCalls: [{ name: 'file_write', arguments: { path: 'a.txt', content: 'a\n' } }],
    },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
  ]);
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const { agents, tasks } = models;
  const transitions: lsp.AgentStatusParams[] = [];
  const server = await startServer(dir, {
    capabilities: CLIENT_CAPABILITIES,
    setup(c) {
      // A connection keeps one handler per method: record what reaches the models' one.
      models.attach(
        recording(c, (method, params) => {
          if (method === lsp.agentStatus.method) transitions.push(params as lsp.AgentStatusParams);
        }),
      );
    },
  });
  connection = server.connection;
  try {
    await models.refreshAgents();
    assert.deepEqual(
      agents.roots().map((n) => n.kind === 'layer' && n.layer),
      ['top', 'mid', 'bottom'],
    );
    for (const layer of agents.roots()) {
      for (const child of agents.children(layer)) {
        assert.equal(
          child.kind === 'agent' && layer.kind === 'layer' && child.agent.layer,
          layer.kind === 'layer' && layer.layer,
        );
      }
    }
    const mid = agents.byLayer('mid')[0];
    assert.ok(mid, 'the team has a mid-layer agent');
    const tooltip = agents.tooltip(mid.agentId);
    assert.match(tooltip, /Tasks completed: \d+/);
    assert.match(tooltip, /Heartbeats: \d+ answered, \d+ missed/);
    assert.match(tooltip, /Performance score: /);

    await server.connection.sendRequest(lsp.submitTask, { description: 'Create a.txt' });
    // Someone works, live: the model follows agentStatus without another listAgents.
    const worker = await server.until('an agent working', () => agents.all().find((a) => a.status === 'working'));
    assert.match(agents.row({ kind: 'agent', agent: worker }).description, /^working · /);
    assert.equal(agents.row({ kind: 'agent', agent: worker }).icon, 'sync~spin');
    const layerRow = agents.row({ kind: 'layer', layer: worker.layer });
    assert.match(layerRow.description, /\d+ working/);
    await server.until('the task completed', () => tasks.allTasks()[0]?.status === 'completed');
    await server.until('every agent idle again', () => agents.all().every((a) => a.status === 'idle'));
    assert.ok(transitions.some((t) => t.agentId === worker.agentId && t.from === 'idle' && t.to === 'working'));
    assert.match(agents.tooltip(worker.agentId), /Last change: /);

    // The model agrees with a fresh listAgents.
    const fresh = (await server.connection.sendRequest(lsp.listAgents, {})).agents;
    assert.deepEqual(
      fresh.map((a) => [a.agentId, a.status]).sort(),
      agents
        .all()
        .map((a) => [a.agentId, a.status])
        .sort(),
    );
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});
