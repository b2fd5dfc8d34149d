// Taking a task back ("Conclave: Undo Task") as a pure flow: conclave/undoTask's preview,
// the whole diff shown, one question (Undo, or Overwrite my edits / Keep my edits when
// files changed since the task, naming them), then the apply. The screen is injected, so
// the tests drive the same flow against the real server. Imports nothing from 'vscode'.

import type { Reverted, UndoAction, UndoResult } from '../lsp_ext';
import { undoTask } from '../lsp_ext';
import type { Requester } from './rpc';
import { shortId } from './tasks';

export interface UndoChoice {
  title: string;
  editedFiles?: 'overwrite' | 'keep';
}

/** The question before an undo: a modal's message, its detail, and its buttons (Cancel is the modal's own). */
export interface UndoQuestion {
  message: string;
  detail: string;
  choices: UndoChoice[];
}

/** What the flow needs from the screen. */
export interface UndoScreen {
  /** Shows the whole diff (a read-only document). */
  showDiff(taskId: string, text: string): Promise<void>;
  /** Asks; undefined when cancelled. */
  ask(question: UndoQuestion): Promise<UndoChoice | undefined>;
}

export type UndoOutcome =
  | { kind: 'undone'; reverted: Reverted; message: string }
  | { kind: 'cancelled' }
  /** Nothing to put back: the files are as before the task already. */
  | { kind: 'nothing'; message: string };

export function actionLabel(action: UndoAction): string {
  switch (action) {
    case 'restore':
      return 'put back as before the task';
    case 'remove':
      return 'removed (the task created it)';
    case 'recreate':
      return 'written again (the task removed it)';
    case 'unchanged':
      return 'already as before the task';
    case 'not_kept':
      return 'left as it is (too large to have been kept)';
  }
}

const CHANGES: ReadonlySet<UndoAction> = new Set(['restore', 'remove', 'recreate']);

/** The read-only document shown before the question: each file's action, then the diff. */
export function undoDocument(plan: UndoResult, title: string): string {
  const lines = [`# Undo task ${shortId(plan.taskId)} — ${title}`, '#'];
  for (const file of plan.files) {
    const edited = file.editedSince && file.action !== 'unchanged' ? ' — changed since the task' : '';
    lines.push(`# ${file.path}: ${actionLabel(file.action)}${edited}`);
  }
  lines.push('');
  const diff = plan.diff.endsWith('\n') || plan.diff === '' ? plan.diff : `${plan.diff}\n`;
  return `${lines.join('\n')}\n${diff}`;
}

export function undoQuestion(plan: UndoResult, title: string): UndoQuestion {
  const changing = plan.files.filter((f) => CHANGES.has(f.action));
  const count = `${changing.length} file${changing.length === 1 ? '' : 's'}`;
  const message = `Undo “${title}”? ${count} will be put back as before the task.`;
  const detail = changing.map((f) => `${f.path}: ${actionLabel(f.action)}`);
  if (plan.conflicts.length === 0) return { message, detail: detail.join('\n'), choices: [{ title: 'Undo' }] };
  const named = plan.conflicts.join(', ');
  return {
    message,
    detail: [
      `You changed ${named} after the task did: undoing overwrites ${plan.conflicts.length === 1 ? 'that edit' : 'those edits'}, or keeps ${plan.conflicts.length === 1 ? 'it' : 'them'} and undoes the rest.`,
      '',
      ...detail,
    ].join('\n'),
    choices: [
      { title: 'Overwrite my edits', editedFiles: 'overwrite' },
      { title: 'Keep my edits', editedFiles: 'keep' },
    ],
  };
}

/** What the person is told once it is done. */
export function undoneMessage(reverted: Reverted, title: string): string {
  const put = reverted.restored.length > 0 ? `put back ${reverted.restored.join(', ')}` : 'nothing needed putting back';
  const kept = reverted.kept.map((k) => `; left ${k.path} as it is (${k.reason})`).join('');
  return `Undid “${title}”: ${put}${kept}.`;
}

/** Preview, show, ask, apply. Errors (an unknown id, a task that cannot be undone) are the server's, thrown. */
export async function runUndo(
  requester: Requester,
  taskId: string,
  title: string,
  screen: UndoScreen,
): Promise<UndoOutcome> {
  const plan = await requester.sendRequest(undoTask, { taskId });
  if (!plan.files.some((f) => CHANGES.has(f.action))) {
    return { kind: 'nothing', message: `“${title}” left nothing to put back: its files are as they were before it.` };
  }
  await screen.showDiff(plan.taskId, undoDocument(plan, title));
  const choice = await screen.ask(undoQuestion(plan, title));
  if (!choice) return { kind: 'cancelled' };
  const done = await requester.sendRequest(undoTask, {
    taskId: plan.taskId,
    apply: true,
    ...(choice.editedFiles ? { editedFiles: choice.editedFiles } : {}),
  });
  const reverted = done.reverted ?? { by: 'undo', at: new Date().toISOString(), restored: [], kept: [] };
  return { kind: 'undone', reverted, message: undoneMessage(reverted, title) };
}
