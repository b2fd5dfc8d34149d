// `conclave acp` under the official ACP client (@agentclientprotocol/sdk), on the real
// binary with a scripted model: Zed's six end-to-end scenarios (basic prompt, file
// mention, tool call, permission, cancel, dropped connection), a follow-up prompt,
// resume after SIGKILL with a pending permission asked again, fs/write_text_file and
// fs/read_text_file.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { workspace, cleanup, start, ofKind, agentText, toolCall, contentText } from './harness.js';

const plan = (...subtasks) => JSON.stringify({ subtasks });
const write = (path, content) => ({ name: 'file_write', arguments: { path, content } });
/** A workspace whose one subtask writes `file`, a change asked of the person first. */
const askedWrite = (file) => workspace([
  { match: 'Plan this task', text: plan({ description: `Create ${file}` }) },
  { match: `Create ${file}`, toolCalls: [write(file, 'x\n')] },
  { text: `Left ${file} alone.`, repeat: true },
], { top: ['writes = "disk"'], extra: ['[approvals]', 'fileChanges = "ask"'] });

test('basic: a prompt is a task, streamed as a plan and tool calls, ending end_turn; a follow-up sees it', async () => {
  const dir = workspace([
    { match: ['Plan this task', 'Create a.txt'], text: plan({ description: 'Create a.txt' }) },
    { match: 'Create a.txt', toolCalls: [write('a.txt', 'a\n')] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    // The follow-up's plan is only answered if its prompt carries the earlier turn.
    { match: ['Plan this task', 'Earlier in this conversation', 'Create a.txt (completed)'], text: plan({ description: 'Create b.txt' }) },
    { match: 'Create b.txt', toolCalls: [write('b.txt', 'b\n')] },
    { match: 'created b.txt', text: 'Wrote b.txt.' },
  ], { top: ['writes = "disk"'] });
  const acp = start(dir);
  try {
    const init = await acp.initialize();
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo.name, 'conclave');
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities, { list: {}, close: {} });

    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    const answer = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Create a.txt' }],
    });
    assert.equal(answer.stopReason, 'end_turn');
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'a\n');

    const plans = ofKind(acp.updates, 'plan');
    assert.ok(plans.length >= 2, 'the plan is sent again as its entries move');
    assert.deepEqual(plans.at(-1).entries, [{ content: 'Create a.txt', priority: 'medium', status: 'completed' }]);
    const call = toolCall(acp.updates, 'Create a.txt');
    assert.ok(call, 'the subtask is a tool call');
    assert.ok(['pending', 'in_progress'].includes(call.history[0].status), call.history[0].status);
    assert.equal(call.status, 'completed');
    assert.equal(call.kind, 'edit');
    assert.deepEqual(call.locations, [{ path: join(dir, 'a.txt') }]);
    const text = agentText(acp.updates);
    assert.match(text, /\*\*Done\.\*\* 1 of 1 subtasks completed/);
    assert.match(text, /Files written: `a\.txt`/);
    // The top agent's final report closes the turn's message.
    assert.match(text, /\*\*Final report by top-\d+\*\*\n\nThe task completed: 1 of 1 subtasks completed\./);
    const usage = ofKind(acp.updates, 'usage_update').at(-1);
    assert.ok(usage && usage.used > 0 && usage.size > 0, `the task's tokens: ${JSON.stringify(usage)}`);
    assert.ok(acp.updates.every((n) => n.sessionId === sessionId));
    if (process.env.ACP_DUMP) console.log(JSON.stringify(acp.updates.map((n) => n.update), null, 1));

    const followUp = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Create b.txt' }],
    });
    assert.equal(followUp.stopReason, 'end_turn');
    assert.equal(readFileSync(join(dir, 'b.txt'), 'utf8'), 'b\n');

    const { sessions } = await acp.agent.request('session/list', { cwd: dir });
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0].sessionId, sessionId);
    assert.equal(sessions[0].title, 'Create a.txt');
    assert.deepEqual(await acp.agent.request('session/close', { sessionId }), {});
    await assert.rejects(
      acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] }),
      (e) => e.code === -32002,
    );
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('file mention: a resource link inside the workspace is context for the task', async () => {
  const dir = workspace([
    { match: ['Plan this task', 'Files in context: notes.md'], text: plan({ description: 'Summarise the notes' }) },
    { match: 'Summarise the notes', toolCalls: [write('summary.md', 'short\n')] },
    { match: 'created summary.md', text: 'Summarised.' },
  ], { top: ['writes = "disk"'] });
  writeFileSync(join(dir, 'notes.md'), '# notes\n');
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'Summarise ' },
        { type: 'resource_link', uri: pathToFileURL(join(dir, 'notes.md')).href, name: 'notes.md' },
      ],
    });
    assert.equal(answer.stopReason, 'end_turn');
    assert.equal(readFileSync(join(dir, 'summary.md'), 'utf8'), 'short\n');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('file mention: mentioned and attached files are context, never deliverables, in this turn and in follow-ups', async () => {
  const long = 'x'.repeat(400);
  const dir = workspace([
    // Kept whole, so the checks read the task as the person wrote it.
    { match: ['Plan this task', 'Summarise notes.md into summary.md'], text: plan({ description: 'Summarise notes.md into summary.md' }) },
    { match: 'Summarise notes.md into summary.md', toolCalls: [write('summary.md', 'short\n')] },
    { match: 'created summary.md', text: 'Summarised.' },
    // The follow-up sees the earlier turn and the attached text as background.
    { match: ['Plan this task', 'Background', 'Summarise notes.md into summary.md (completed)', long], text: plan({ description: 'Add a title from spec.md to summary.md' }) },
    { match: 'Add a title from spec.md to summary.md', toolCalls: [write('summary.md', '# Notes\nshort\n')] },
    { match: 'summary.md', text: 'Titled.', repeat: true },
  ], { top: ['writes = "disk"'] });
  writeFileSync(join(dir, 'notes.md'), '# notes\n');
  writeFileSync(join(dir, 'spec.md'), 'on disk\n');
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const first = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'Summarise ' },
        { type: 'resource_link', uri: pathToFileURL(join(dir, 'notes.md')).href, name: 'notes.md' },
        { type: 'text', text: ' into summary.md' },
      ],
    });
    assert.equal(first.stopReason, 'end_turn');
    assert.equal(first._meta, undefined, 'a completed turn carries no failure');
    assert.match(agentText(acp.updates), /\*\*Done\.\*\*/);
    assert.equal(readFileSync(join(dir, 'notes.md'), 'utf8'), '# notes\n', 'the mentioned file is left alone');

    const followUp = await acp.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'Add a title from ' },
        { type: 'resource', resource: { uri: pathToFileURL(join(dir, 'spec.md')).href, text: long } },
        { type: 'text', text: ' to summary.md' },
      ],
    });
    assert.equal(followUp.stopReason, 'end_turn', 'the earlier turn\'s files are not this turn\'s deliverables');
    assert.equal(readFileSync(join(dir, 'summary.md'), 'utf8'), '# Notes\nshort\n');
    const titles = ofKind(acp.updates, 'tool_call').map((c) => c.title);
    const entries = ofKind(acp.updates, 'plan').flatMap((p) => p.entries.map((e) => e.content));
    for (const shown of [...titles, ...entries]) {
      assert.ok(!shown.includes(long), `an attached file's text stays out of titles and plan entries: ${shown.slice(0, 80)}…`);
      assert.ok(shown.length <= 120, `short: ${shown.slice(0, 80)}…`);
    }
    const { sessions } = await acp.agent.request('session/list', { cwd: dir });
    assert.equal(sessions[0].title, 'Summarise notes.md into summary.md');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('a turn that does not get the work done ends with a stopReason and says why, never an error', async () => {
  const dir = askedWrite('r.txt');
  // The person refuses the change (final), and anything asked after it.
  const acp = start(dir, {
    permission: (params) => {
      const diff = params.toolCall.content.some((c) => c.type === 'diff');
      return { outcome: { outcome: 'selected', optionId: diff ? 'reject' : 'abort' } };
    },
  });
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create r.txt' }] });
    assert.equal(answer.stopReason, 'end_turn');
    assert.equal(answer._meta.conclave.status, 'failed');
    assert.match(answer._meta.conclave.taskId, /^[0-9a-f-]{36}$/);
    assert.ok(answer._meta.conclave.errorReport.endsWith('ERROR_REPORT.md'), answer._meta.conclave.errorReport);
    assert.equal(existsSync(join(dir, 'r.txt')), false);
    const text = agentText(acp.updates);
    assert.match(text, /\*\*The task failed\.\*\*/);
    assert.match(text, /ERROR_REPORT\.md/);
    assert.doesNotMatch(text, /[^\n]\*\*The task failed/, 'the closing message starts a paragraph of its own');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

/** One subtask whose first model call fails with HTTP `status`; its tool call's texts. */
async function toolCallAfterAFailure(status) {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create b.txt' }) },
    { match: 'Create b.txt', error: { kind: 'http', status }, times: 1 },
    { match: 'Create b.txt', toolCalls: [write('b.txt', 'b\n')] },
    { match: 'created b.txt', text: 'Wrote b.txt.' },
  ], { top: ['writes = "disk"'] });
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create b.txt' }] });
    assert.equal(answer.stopReason, 'end_turn');
    const call = toolCall(acp.updates, 'Create b.txt');
    assert.equal(call.status, 'completed');
    return call.history.map((u) => contentText(u.content));
  } finally {
    acp.stop();
    cleanup(dir);
  }
}

test('tool call: a subtask that fails once shows the retry on its tool call, then completes', async () => {
  const texts = await toolCallAfterAFailure(400);
  assert.ok(texts.some((t) => /↻ retry 1\/\d+ in \d+ ms/.test(t)), `a retry line: ${JSON.stringify(texts)}`);
  assert.ok(texts.some((t) => /attempt 2/.test(t)), `the second attempt: ${JSON.stringify(texts)}`);
});

test('tool call: a provider that answers 503 makes the subtask wait, shown on its tool call, at no attempt', async () => {
  const texts = await toolCallAfterAFailure(503);
  assert.ok(texts.some((t) => /waiting for scripted \(.+\), next try in \d+ m?s/.test(t)), `a wait line: ${JSON.stringify(texts)}`);
  assert.ok(!texts.some((t) => /attempt 2/.test(t)), `waiting costs no attempt: ${JSON.stringify(texts)}`);
});

test('permission: file changes are asked with their diff; approve writes, reject does not', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create a.txt' }, { description: 'Create r.txt' }) },
    { match: 'Create a.txt', toolCalls: [write('a.txt', 'a\n')] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    { match: 'Create r.txt', toolCalls: [write('r.txt', 'r\n')] },
    // After the rejection, whatever the agent is asked next.
    { text: 'The user did not want r.txt; left it alone.', repeat: true },
    // The failed task keeps its changes, to show what the approval let through.
  ], { top: ['writes = "disk"'], extra: ['[approvals]', 'fileChanges = "ask"', '[undo]', 'onFailure = "keep"'] });
  const acp = start(dir, {
    permission: (params) => {
      const diff = params.toolCall.content.find((c) => c.type === 'diff');
      // File changes: approve a.txt, reject r.txt. Anything else (an escalation if the
      // team does not take no for an answer) is aborted.
      const optionId = !diff ? 'abort' : diff.path.endsWith('a.txt') ? 'approve' : 'reject';
      return { outcome: { outcome: 'selected', optionId } };
    },
  });
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Make a.txt and r.txt' }] });
    assert.equal(answer.stopReason, 'end_turn', 'a turn that did not get everything done still ends as a turn');
    assert.equal(answer._meta.conclave.status, 'failed', 'a refused change is final: the task failed');
    const changes = acp.permissions.filter((p) => p.toolCall.content.some((c) => c.type === 'diff'));
    assert.equal(changes.length, 2, 'each file change asked once');
    for (const asked of changes) {
      assert.equal(asked.sessionId, sessionId);
      assert.deepEqual(asked.options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once']);
      const diff = asked.toolCall.content.find((c) => c.type === 'diff');
      assert.ok(diff.path.startsWith(dir), diff.path);
      assert.equal(diff.newText, diff.path.endsWith('a.txt') ? 'a\n' : 'r\n');
    }
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'a\n');
    assert.equal(existsSync(join(dir, 'r.txt')), false, 'the rejected file was not written');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('permission: allow_always approves later changes of the same kind without asking', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create a.txt' }, { description: 'Create c.txt', dependsOn: [0] }) },
    { match: 'Create a.txt', toolCalls: [write('a.txt', 'a\n')] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    { match: 'Create c.txt', toolCalls: [write('c.txt', 'c\n')] },
    { match: 'created c.txt', text: 'Wrote c.txt.' },
  ], { top: ['writes = "disk"'], extra: ['[approvals]', 'fileChanges = "ask"'] });
  const acp = start(dir, { permission: () => ({ outcome: { outcome: 'selected', optionId: 'approve_always' } }) });
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Make a.txt then c.txt' }] });
    assert.equal(answer.stopReason, 'end_turn');
    assert.equal(acp.permissions.length, 1, 'asked once, then allowed for the session');
    assert.equal(readFileSync(join(dir, 'c.txt'), 'utf8'), 'c\n');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('cancel: session/cancel ends the prompt with stopReason cancelled, never an error', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create slow.txt' }) },
    { match: 'Create slow.txt', delayMs: 120000, text: 'too late' },
  ], { top: ['writes = "disk"'] });
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const prompt = acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create slow.txt' }] });
    await acp.waitFor('the subtask running', (n) => n.update?.sessionUpdate === 'tool_call_update' && n.update.status === 'in_progress');
    await acp.agent.notify('session/cancel', { sessionId });
    assert.deepEqual(await prompt, { stopReason: 'cancelled' });
    assert.match(agentText(acp.updates), /\*\*Cancelled\.\*\*/);
    // The session takes the next prompt.
    const again = acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create slow.txt again' }] });
    await acp.agent.notify('session/cancel', { sessionId });
    assert.equal((await again).stopReason, 'cancelled');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('cancel: an approval still being asked ends its tool call as failed, withdrawn, never pending', async () => {
  const dir = askedWrite('a.txt');
  // Never answered, as a person who walked away.
  const acp = start(dir);
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const prompt = acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create a.txt' }] });
    const asked = await acp.waitFor('the file change asked', (n) => n.permission);
    const callId = asked.permission.toolCall.toolCallId;
    await acp.agent.notify('session/cancel', { sessionId });
    assert.equal((await prompt).stopReason, 'cancelled');
    const ended = ofKind(acp.updates, 'tool_call_update').filter((u) => u.toolCallId === callId && u.status);
    assert.equal(ended.at(-1)?.status, 'failed', `the approval's tool call ended: ${JSON.stringify(ended)}`);
    assert.match(ended.at(-1).title, /withdrawn/);
    assert.equal(existsSync(join(dir, 'a.txt')), false);
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('session/list: sessions with a conversation first, most recent first; never-prompted ones after', async () => {
  const dir = workspace([
    { match: ['Plan this task', 'Create a.txt'], text: plan({ description: 'Create a.txt' }) },
    { match: 'Create a.txt', toolCalls: [write('a.txt', 'a\n')] },
    { match: 'created a.txt', text: 'Wrote a.txt.' },
    { match: ['Plan this task', 'Create b.txt'], text: plan({ description: 'Create b.txt' }) },
    { match: 'Create b.txt', toolCalls: [write('b.txt', 'b\n')] },
    { match: 'created b.txt', text: 'Wrote b.txt.' },
  ], { top: ['writes = "disk"'] });
  const acp = start(dir);
  try {
    await acp.initialize();
    const older = (await acp.agent.request('session/new', { cwd: dir, mcpServers: [] })).sessionId;
    assert.equal((await acp.agent.request('session/prompt', { sessionId: older, prompt: [{ type: 'text', text: 'Create a.txt' }] })).stopReason, 'end_turn');
    const newer = (await acp.agent.request('session/new', { cwd: dir, mcpServers: [] })).sessionId;
    assert.equal((await acp.agent.request('session/prompt', { sessionId: newer, prompt: [{ type: 'text', text: 'Create b.txt' }] })).stopReason, 'end_turn');
    const empty = (await acp.agent.request('session/new', { cwd: dir, mcpServers: [] })).sessionId;
    const { sessions } = await acp.agent.request('session/list', { cwd: dir });
    assert.deepEqual(sessions.map((s) => s.sessionId), [newer, older, empty]);
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('one Conclave per folder: a second agent is refused with 1007, naming the client that holds it', async () => {
  const dir = workspace([]);
  const first = start(dir);
  const second = start(dir);
  try {
    await first.initialize();
    await first.agent.request('session/new', { cwd: dir, mcpServers: [] });
    await second.initialize();
    await assert.rejects(second.agent.request('session/new', { cwd: dir, mcpServers: [] }), (error) => {
      assert.equal(error.code, 1007);
      assert.match(error.message, /already serving/);
      assert.equal(error.data.holder.pid, first.child.pid);
      assert.deepEqual(error.data.holder.client, { name: 'conclave-acp-node-test (ACP)', version: '1.0.0' });
      return true;
    });
  } finally {
    second.stop();
    first.stop();
    cleanup(dir);
  }
});

test('dropped connection: closing stdin mid-task ends the process cleanly, and the session is kept', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create slow.txt' }) },
    { match: 'Create slow.txt', delayMs: 120000, text: 'too late' },
  ], { top: ['writes = "disk"'] });
  const first = start(dir);
  let second;
  try {
    await first.initialize();
    const { sessionId } = await first.agent.request('session/new', { cwd: dir, mcpServers: [] });
    first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create slow.txt' }] }).catch(() => {});
    await first.waitFor('the subtask running', (n) => n.update?.sessionUpdate === 'tool_call_update' && n.update.status === 'in_progress');
    first.child.stdin.end();
    const ended = await Promise.race([first.exited, new Promise((r) => setTimeout(() => r('hung'), 15000))]);
    assert.deepEqual(ended, { code: 0, signal: null }, `stderr:\n${first.stderr().slice(-2000)}`);

    second = start(dir);
    await second.initialize();
    const { sessions } = await second.agent.request('session/list', { cwd: dir });
    assert.deepEqual(sessions.map((s) => s.sessionId), [sessionId]);
  } finally {
    first.stop();
    second?.stop();
    cleanup(dir);
  }
});

test('resume after SIGKILL: session/load replays the session and asks the pending permission again', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create k.txt' }) },
    { match: 'Create k.txt', toolCalls: [write('k.txt', 'k\n')] },
    { match: 'created k.txt', text: 'Wrote k.txt.' },
  ], { top: ['writes = "disk"'], extra: ['[approvals]', 'fileChanges = "ask"'] });
  // The first client never answers the permission.
  const first = start(dir);
  let second;
  let third;
  try {
    await first.initialize();
    const { sessionId } = await first.agent.request('session/new', { cwd: dir, mcpServers: [] });
    first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create k.txt' }] }).catch(() => {});
    const { permission } = await first.waitFor('the permission', (v) => v.permission);
    const before = permission.toolCall.content.find((c) => c.type === 'diff');
    first.child.kill('SIGKILL');
    await first.exited;
    assert.equal(existsSync(join(dir, 'k.txt')), false);

    second = start(dir, { permission: () => ({ outcome: { outcome: 'selected', optionId: 'approve' } }) });
    const init = await second.initialize();
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.deepEqual(await second.agent.request('session/load', { sessionId, cwd: dir, mcpServers: [] }), {});
    const replayed = ofKind(second.updates, 'user_message_chunk');
    assert.deepEqual(replayed.map((u) => u.content), [{ type: 'text', text: 'Create k.txt' }], 'the conversation is replayed');
    const { permission: again } = await second.waitFor('the permission asked again', (v) => v.permission);
    assert.equal(again.sessionId, sessionId);
    assert.deepEqual(again.toolCall.content.find((c) => c.type === 'diff'), before);
    await second.waitFor('the resumed task to end', (n) => /\*\*Done\.\*\*/.test(n.update?.content?.text ?? ''));
    assert.equal(readFileSync(join(dir, 'k.txt'), 'utf8'), 'k\n');
    // Agents are shown by name, even those of the server that was killed.
    const heads = [...ofKind(first.updates, 'tool_call'), ...ofKind(first.updates, 'tool_call_update'),
      ...ofKind(second.updates, 'tool_call'), ...ofKind(second.updates, 'tool_call_update')]
      .map((u) => contentText(u.content)).filter((t) => t);
    assert.ok(heads.some((t) => /bottom-\d/.test(t)), `an agent named: ${JSON.stringify(heads)}`);
    for (const head of heads) assert.doesNotMatch(head, /(^|\s)[0-9a-f]{8}( ·|$)/, `an agent shown by id: ${head}`);

    // A finished task replayed by the next server shows its agents by name too.
    second.stop();
    await second.exited;
    third = start(dir);
    await third.initialize();
    assert.deepEqual(await third.agent.request('session/load', { sessionId, cwd: dir, mcpServers: [] }), {});
    // The client may handle the replayed updates after the answer: wait for the last one.
    await third.waitFor('the replayed closing message', (n) => /\*\*Done\.\*\*/.test(n.update?.content?.text ?? ''));
    const replayedHeads = [...ofKind(third.updates, 'tool_call'), ...ofKind(third.updates, 'tool_call_update')]
      .map((u) => contentText(u.content)).filter((t) => t);
    assert.ok(replayedHeads.some((t) => /bottom-\d/.test(t)), `an agent named in the replay: ${JSON.stringify(replayedHeads)}`);
    for (const head of replayedHeads) assert.doesNotMatch(head, /(^|\s)[0-9a-f]{8}( ·|$)/, `an agent shown by id: ${head}`);
  } finally {
    first.stop();
    second?.stop();
    third?.stop();
    cleanup(dir);
  }
});

test('fs/write_text_file: offered by the client, every file goes through it', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Create w.txt' }) },
    { match: 'Create w.txt', toolCalls: [write('w.txt', 'through the editor\n')] },
    { match: 'created w.txt', text: 'Wrote w.txt.' },
  ]);
  const acp = start(dir);
  try {
    await acp.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create w.txt' }] });
    assert.equal(answer.stopReason, 'end_turn');
    assert.deepEqual(acp.writes, [{ sessionId, path: join(dir, 'w.txt'), content: 'through the editor\n' }]);
    assert.equal(readFileSync(join(dir, 'w.txt'), 'utf8'), 'through the editor\n');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('fs/read_text_file: offered by the client, the agents read the editor\'s buffer, not the disk', async () => {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Read notes.md' }) },
    { match: 'Read notes.md', toolCalls: [{ name: 'file_read', arguments: { path: 'notes.md' } }] },
    // Only the unsaved buffer's text lets the subtask finish.
    { match: 'unsaved edit in the buffer', text: 'The notes say: unsaved edit in the buffer.' },
  ]);
  writeFileSync(join(dir, 'notes.md'), 'saved text on disk\n');
  const acp = start(dir, { read: () => ({ content: 'unsaved edit in the buffer\n' }) });
  try {
    await acp.initialize({ fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const answer = await acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'What do the notes say?' }] });
    assert.equal(answer.stopReason, 'end_turn');
    assert.deepEqual(acp.reads, [{ sessionId, path: join(dir, 'notes.md') }]);
    assert.equal(readFileSync(join(dir, 'notes.md'), 'utf8'), 'saved text on disk\n', 'reading changed nothing');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});
