// The top agent's final report on a finished task (TaskDetail.finalReport) as people read
// it: a row under the task in the Tasks tree, and a read-only Markdown document headed by
// who wrote it. Imports nothing from 'vscode'.

import type { FinalReport, TaskDetail } from '../lsp_ext';
import { readableTime } from './time';

/** The report's first line: its outcome ("The task completed: 2 of 2 subtasks completed."). */
export function reportOutcome(report: FinalReport): string {
  return report.text.trim().split('\n')[0]?.trim() ?? '';
}

/** The document path of a task's final report: /<taskId>/<title>-final-report.md (".md": Markdown). */
export function reportPath(taskId: string, title: string): string {
  const name =
    title
      .replace(/[\\/:*?"<>|\s]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'task';
  return `/${taskId}/${name}-final-report.md`;
}

/** The task id a report document's path names. */
export function reportTaskId(path: string): string | undefined {
  return path.split('/')[1] || undefined;
}

/** The document's text: who wrote it, on which task and when, then the report itself. */
export function reportDocument(detail: TaskDetail): string {
  const report = detail.finalReport;
  if (!report) {
    return [
      `# Final report on "${detail.title}"`,
      '',
      `_The top agent has not written its final report on this task (${detail.status.replace(/_/g, ' ')}) yet._`,
      '',
    ].join('\n');
  }
  return [
    `# Final report by ${report.by}`,
    '',
    `On the task "${detail.title}" (${detail.status.replace(/_/g, ' ')}), written ${readableTime(report.at)}.`,
    '',
    report.text.trim(),
    '',
  ].join('\n');
}
