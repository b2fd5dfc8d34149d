// A check of a task as a read-only document: what ran, on which files, which rules found
// what, and its whole output. Imports nothing from 'vscode'.

import type { CheckResult, TaskDetail } from '../lsp_ext';
import { readableTime } from './time';

/** The document path of a task's check: /<taskId>/<index>/<name>.log, the name for the tab. */
export function checkPath(taskId: string, index: number, check: CheckResult): string {
  const name =
    check.name
      .replace(/[\\/:*?"<>|\s]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 48) || 'check';
  return `/${taskId}/${index}/${name}.log`;
}

/** The task id and index a check document's path names. */
export function parseCheckPath(path: string): { taskId: string; index: number } | undefined {
  const [, taskId, index] = path.split('/');
  const n = Number(index);
  return taskId && Number.isInteger(n) && n >= 0 ? { taskId, index: n } : undefined;
}

/** The document's text. */
export function checkDocument(detail: TaskDetail, check: CheckResult): string {
  const lines = [`${check.name} — ${check.status}`, '', `Task: ${detail.title}`];
  const subtask = check.subtaskId ? detail.subtasks.find((s) => s.subtaskId === check.subtaskId) : undefined;
  lines.push(`Checked: ${subtask ? `the subtask "${subtask.description}"` : 'the whole task'}`);
  lines.push(`Kind: ${check.kind}`);
  if (check.rules && check.rules.length > 0) lines.push(`Rules: ${check.rules.join(', ')}`);
  if (check.files.length > 0) lines.push(`Files: ${check.files.join(', ')}`);
  lines.push(`Ran: ${readableTime(check.at)}`, '');
  const detailText = check.detail.trim();
  if (detailText) {
    lines.push(check.status === 'failed' ? 'Output:' : 'Detail:', '', detailText);
  } else {
    lines.push(check.status === 'failed' ? 'The check gave no output.' : 'Nothing more to say.');
  }
  return `${lines.join('\n')}\n`;
}
