// "Conclave: Undo Task" against the real server: the flow of model/undo.ts (preview, the
// diff shown, the question, the apply) with the screen recorded, and the Tasks tree
// marking the task undone from conclave/taskUpdated.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type * as rpc from 'vscode-jsonrpc/node';
import * as lsp from '../src/lsp_ext';
import { ConclaveModels } from '../src/model/feed';
import { isUndoable } from '../src/model/tasks';
import { runUndo, type UndoChoice, type UndoQuestion, undoQuestion } from '../src/model/undo';
import { scriptedWorkspace, startServer } from './harness';

const write = (path: string, content: string) => ({ name: 'file_write', arguments: { path, content } });

function rewriting(): string {
  const dir = scriptedWorkspace([
    { match: 'Plan this task', text: JSON.stringify({ subtasks: [{ description: 'Rewrite the files' }] }) },
    {
      match: 'Rewrite the files',
      toolCalls: [
        write('a.txt', 'TASK a\n'),
        write('notes.txt', 'task notes\n'),
        write('new.txt', 'made by the task\n'),
      ],
    },
    { match: 'created new.txt', text: 'Rewrote them.' },
  ]);
  writeFileSync(join(dir, 'a.txt'), 'original a\n');
  writeFileSync(join(dir, 'notes.txt'), 'person notes\n');
  return dir;
}

/** A screen that records what the person is shown and answers with `answers`, in turn. */
function screen(answers: (string | undefined)[]) {
  const shown: { diffs: string[]; questions: UndoQuestion[] } = { diffs: [], questions: [] };
  return {
    shown,
    async showDiff(_taskId: string, text: string) {
      shown.diffs.push(text);
    },
    async ask(question: UndoQuestion): Promise<UndoChoice | undefined> {
      shown.questions.push(question);
      const answer = answers.shift();
      return question.choices.find((c) => c.title === answer);
    },
  };
}

const read = (dir: string, file: string) =>
  existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8') : null;

test('Undo Task: the diff, a question naming the files edited since, the apply, and the tree says undone', async () => {
  const dir = rewriting();
  let connection: rpc.MessageConnection | undefined;
  const models = new ConclaveModels(() => connection);
  const server = await startServer(dir, { setup: (c) => models.attach(c) });
  connection = server.connection;
  try {
    await models.refresh();
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Rewrite the files' });
    await server.until('the task completed', () => models.tasks.task(taskId)?.status === 'completed');
    const task = () => models.tasks.task(taskId)!;
    const row = () => models.tasks.row({ kind: 'task', task: task() });
    assert.equal(row().contextValue, 'task.completed', 'the tree offers Undo on it');
    assert.ok(isUndoable(task()), 'the palette offers it');
    assert.equal(read(dir, 'a.txt'), 'TASK a\n');

    // Shown and cancelled: nothing changes.
    const cancelled = screen([undefined]);
    assert.deepEqual(await runUndo(server.connection, taskId.slice(0, 8), 'Rewrite the files', cancelled), {
      kind: 'cancelled',
    });
    const [diff] = cancelled.shown.diffs;
    assert.match(diff, /^# Undo task [0-9a-f]{8} — Rewrite the files\n/);
    assert.match(diff, /# a\.txt: put back as before the task\n/);
    assert.match(diff, /# new\.txt: removed \(the task created it\)\n/);
    assert.ok(diff.includes('--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-TASK a\n+original a\n'), diff);
    assert.ok(diff.includes('--- a/new.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made by the task\n'), diff);
    assert.deepEqual(cancelled.shown.questions[0].choices, [{ title: 'Undo' }]);
    assert.equal(
      cancelled.shown.questions[0].message,
      'Undo “Rewrite the files”? 3 files will be put back as before the task.',
    );
    assert.equal(read(dir, 'a.txt'), 'TASK a\n');
    assert.equal(read(dir, 'new.txt'), 'made by the task\n');

    // The person edits notes.txt: they choose, and the file is named.
    writeFileSync(join(dir, 'notes.txt'), 'my own edit\n');
    const keeping = screen(['Keep my edits']);
    const outcome = await runUndo(server.connection, taskId, 'Rewrite the files', keeping);
    const question = keeping.shown.questions[0];
    assert.deepEqual(
      question.choices.map((c) => c.title),
      ['Overwrite my edits', 'Keep my edits'],
    );
    assert.match(
      question.detail,
      /^You changed notes\.txt after the task did: undoing overwrites that edit, or keeps it and undoes the rest\./,
    );
    assert.match(keeping.shown.diffs[0], /# notes\.txt: put back as before the task — changed since the task\n/);
    assert.equal(outcome.kind, 'undone');
    assert.equal(
      outcome.kind === 'undone' && outcome.message,
      'Undid “Rewrite the files”: put back a.txt, new.txt; left notes.txt as it is (it was changed after the task changed it).',
    );
    assert.equal(read(dir, 'a.txt'), 'original a\n');
    assert.equal(read(dir, 'new.txt'), null);
    assert.equal(read(dir, 'notes.txt'), 'my own edit\n');

    // The tree follows conclave/taskUpdated: undone, and no longer offered.
    await server.until('the task marked undone', () => task().revertedBy === 'undo');
    assert.match(row().description, /^completed · undone · /);
    assert.equal(row().contextValue, 'task.completed.undone');
    assert.ok(!isUndoable(task()));
    await assert.rejects(runUndo(server.connection, taskId, 'Rewrite the files', screen(['Undo'])), /undone already/);
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('Undo Task: overwriting the edits puts every file back', async () => {
  const dir = rewriting();
  const server = await startServer(dir);
  try {
    let status: string | undefined;
    server.connection.onNotification(lsp.taskUpdated, ({ task }) => {
      status = task.status;
    });
    const { taskId } = await server.connection.sendRequest(lsp.submitTask, { description: 'Rewrite the files' });
    await server.until('the task completed', () => status === 'completed');
    writeFileSync(join(dir, 'notes.txt'), 'my own edit\n');
    const overwriting = screen(['Overwrite my edits']);
    const outcome = await runUndo(server.connection, taskId, 'Rewrite the files', overwriting);
    assert.equal(
      outcome.kind === 'undone' && outcome.message,
      'Undid “Rewrite the files”: put back a.txt, new.txt, notes.txt.',
    );
    assert.equal(read(dir, 'notes.txt'), 'person notes\n');
    assert.equal(await server.shutdown(), 0);
  } finally {
    server.dispose();
  }
});

test('the undo question: one Undo button without edits since the task; two, naming the files, with them', () => {
  const plan: lsp.UndoResult = {
    taskId: '0123456789abcdef',
    applied: false,
    diff: '',
    conflicts: ['b.txt', 'c.txt'],
    files: [
      { path: 'a.txt', uri: 'file:///w/a.txt', action: 'restore', editedSince: false, diff: '' },
      { path: 'b.txt', uri: 'file:///w/b.txt', action: 'remove', editedSince: true, diff: '' },
      { path: 'c.txt', uri: 'file:///w/c.txt', action: 'restore', editedSince: true, diff: '' },
      { path: 'd.txt', uri: 'file:///w/d.txt', action: 'unchanged', editedSince: false, diff: '' },
    ],
    reverted: null,
  };
  const asked = undoQuestion(plan, 'T');
  assert.equal(asked.message, 'Undo “T”? 3 files will be put back as before the task.');
  assert.equal(
    asked.detail,
    'You changed b.txt, c.txt after the task did: undoing overwrites those edits, or keeps them and undoes the rest.\n\na.txt: put back as before the task\nb.txt: removed (the task created it)\nc.txt: put back as before the task',
  );
  assert.deepEqual(asked.choices, [
    { title: 'Overwrite my edits', editedFiles: 'overwrite' },
    { title: 'Keep my edits', editedFiles: 'keep' },
  ]);
  assert.deepEqual(undoQuestion({ ...plan, conflicts: [] }, 'T').choices, [{ title: 'Undo' }]);
});
