// `/undo` in `conclave acp` under the official ACP client, on the real binary: the
// command is announced after session/new and session/load, takes the session's last
// finished task back after showing its diff and asking, through fs/write_text_file, and
// asks about files the person changed since the task.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { workspace, cleanup, start, ofKind, agentText } from './harness.js';

const plan = (...subtasks) => JSON.stringify({ subtasks });
const write = (path, content) => ({ name: 'file_write', arguments: { path, content } });

/** A workspace whose one task rewrites a.txt and notes.txt and creates new.txt. */
function rewriting() {
  const dir = workspace([
    { match: 'Plan this task', text: plan({ description: 'Rewrite the files' }) },
    { match: 'Rewrite the files', toolCalls: [write('a.txt', 'TASK a\n'), write('notes.txt', 'task notes\n'), write('new.txt', 'made by the task\n')] },
    { match: 'created new.txt', text: 'Rewrote them.' },
  ]);
  writeFileSync(join(dir, 'a.txt'), 'original a\n');
  writeFileSync(join(dir, 'notes.txt'), 'person notes\n');
  return dir;
}

const read = (dir, file) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8') : null);
const prompt = (acp, sessionId, text) => acp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
/** The agent text sent since `from` updates. */
const textSince = (acp, from) => agentText(acp.updates.slice(from));

test('/undo is announced, shows the diff, asks, and puts the files back through the editor', async () => {
  const dir = rewriting();
  const answers = [];
  const acp = start(dir, { permission: async (params) => ({ outcome: { outcome: 'selected', optionId: answers.shift() } }) });
  try {
    await acp.initialize({ fs: { readTextFile: false, writeTextFile: true } });
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const announced = await acp.waitFor('available commands', (n) => n.update?.sessionUpdate === 'available_commands_update');
    assert.equal(announced.sessionId, sessionId);
    assert.deepEqual(announced.update.availableCommands.map((c) => c.name), ['undo']);
    assert.equal(announced.update.availableCommands[0].input.hint, 'task id (optional)');

    assert.equal((await prompt(acp, sessionId, 'Rewrite the files')).stopReason, 'end_turn');
    assert.equal(read(dir, 'a.txt'), 'TASK a\n');
    assert.equal(read(dir, 'new.txt'), 'made by the task\n');

    // Asked and cancelled: nothing changes, and the turn ends.
    answers.push('cancel');
    let from = acp.updates.length;
    assert.equal((await prompt(acp, sessionId, '/undo')).stopReason, 'end_turn');
    let said = textSince(acp, from);
    assert.match(said, /\*\*Undo\*\* task `[0-9a-f]{8}` — Rewrite the files/);
    assert.match(said, /- `a\.txt`: put back as before the task\n/);
    assert.match(said, /- `new\.txt`: removed \(the task created it\)\n/);
    assert.ok(said.includes('--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-TASK a\n+original a\n'), said);
    assert.ok(said.includes('--- a/new.txt\n+++ /dev/null\n'), said);
    assert.match(said, /Nothing was undone\./);
    assert.equal(acp.permissions.length, 1);
    assert.deepEqual(acp.permissions[0].options.map((o) => [o.optionId, o.kind]), [['undo', 'allow_once'], ['cancel', 'reject_once']]);
    assert.equal(acp.permissions[0].toolCall.kind, 'edit');
    assert.equal(read(dir, 'a.txt'), 'TASK a\n');
    assert.equal(acp.writes.filter((w) => w.content === 'original a\n').length, 0);
    const tasks = ofKind(acp.updates, 'tool_call').filter((c) => c.title.startsWith('Undo task'));
    assert.equal(tasks.length, 1, 'the undo shows as one tool call');

    // The person edits notes.txt: now the choice is theirs, and it is named.
    writeFileSync(join(dir, 'notes.txt'), 'my own edit\n');
    answers.push('keep');
    from = acp.updates.length;
    assert.equal((await prompt(acp, sessionId, '/undo')).stopReason, 'end_turn');
    said = textSince(acp, from);
    assert.match(said, /- `notes\.txt`: put back as before the task — \*\*changed since the task\*\*/);
    const asked = acp.permissions[1];
    assert.deepEqual(asked.options.map((o) => o.optionId), ['overwrite', 'keep', 'cancel']);
    assert.equal(asked.options[0].name, 'Overwrite my edits (notes.txt)');
    assert.match(said, /\*\*Undone\.\*\* Put back as before task `[0-9a-f]{8}`: `a\.txt`, `new\.txt`\./);
    assert.match(said, /- `notes\.txt` left as it is: it was changed after the task changed it\./);
    assert.equal(read(dir, 'a.txt'), 'original a\n');
    assert.equal(read(dir, 'new.txt'), null, 'the file the task created is removed');
    assert.equal(read(dir, 'notes.txt'), 'my own edit\n', 'the person kept their edit');
    assert.deepEqual(
      acp.writes.filter((w) => w.path === join(dir, 'a.txt')).at(-1),
      { sessionId, path: join(dir, 'a.txt'), content: 'original a\n' },
      'put back through fs/write_text_file',
    );

    // Undone: nothing of this session is left to take back.
    from = acp.updates.length;
    assert.equal((await prompt(acp, sessionId, '/undo')).stopReason, 'end_turn');
    assert.match(textSince(acp, from), /Nothing to undo: no task of this session finished with its changes in place/);
    assert.equal(acp.permissions.length, 2, 'not asked');
  } finally {
    acp.stop();
    cleanup(dir);
  }
});

test('/undo <id> overwrites the person\'s edits when told to; a loaded session is told its commands', async () => {
  const dir = rewriting();
  const acp = start(dir, { permission: async () => ({ outcome: { outcome: 'selected', optionId: 'overwrite' } }) });
  let second;
  try {
    await acp.initialize();
    const { sessionId } = await acp.agent.request('session/new', { cwd: dir, mcpServers: [] });
    assert.equal((await prompt(acp, sessionId, 'Rewrite the files')).stopReason, 'end_turn');
    writeFileSync(join(dir, 'notes.txt'), 'my own edit\n');
    acp.stop();
    await acp.exited;

    second = start(dir, { permission: async () => ({ outcome: { outcome: 'selected', optionId: 'overwrite' } }) });
    await second.initialize();
    assert.deepEqual(await second.agent.request('session/load', { sessionId, cwd: dir, mcpServers: [] }), {});
    const announced = await second.waitFor('available commands', (n) => n.update?.sessionUpdate === 'available_commands_update');
    assert.deepEqual(announced.update.availableCommands.map((c) => c.name), ['undo']);

    // Named by the start of its id, as the editors show it.
    const saved = JSON.parse(readFileSync(join(dir, '.conclave', 'acp', 'sessions', `${sessionId}.json`), 'utf8'));
    const tasks = saved.turns.map((t) => t.taskId);
    assert.equal(tasks.length, 1, 'the /undo prompts are not turns of tasks');
    const from = second.updates.length;
    assert.equal((await prompt(second, sessionId, `/undo ${tasks[0].slice(0, 8)}`)).stopReason, 'end_turn');
    const said = textSince(second, from);
    assert.match(said, /\*\*Undone\.\*\* Put back as before task `[0-9a-f]{8}`: `a\.txt`, `new\.txt`, `notes\.txt`\./);
    assert.equal(read(dir, 'notes.txt'), 'person notes\n', 'overwritten as the person said');
    assert.equal(read(dir, 'a.txt'), 'original a\n');
    assert.equal(read(dir, 'new.txt'), null);

    const unknown = second.updates.length;
    assert.equal((await prompt(second, sessionId, '/undo ffffffffff')).stopReason, 'end_turn');
    assert.match(textSince(second, unknown), /No task's id starts with `ffffffffff`\./);
  } finally {
    acp.stop();
    second?.stop();
    cleanup(dir);
  }
});
