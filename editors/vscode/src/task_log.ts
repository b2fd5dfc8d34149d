// Task logs as read-only virtual documents (conclave-log:/<taskId>/<title>.log), like the
// whiteboards: never an unsaved untitled buffer. The text is fetched with conclave/taskLog
// when the document is shown, and again (at most once a second) while the task changes.

import * as vscode from 'vscode';
import * as lsp from './lsp_ext';
import type { Requester } from './model/rpc';
import type { TasksModel } from './model/tasks';

export const TASK_LOG_SCHEME = 'conclave-log';

export function taskLogUri(taskId: string, title: string): vscode.Uri {
  const name =
    title
      .replace(/[\\/:*?"<>|\s]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'task';
  return vscode.Uri.from({ scheme: TASK_LOG_SCHEME, path: `/${taskId}/${name}.log` });
}

function taskIdOf(uri: vscode.Uri): string | undefined {
  return uri.path.split('/')[1] || undefined;
}

export class TaskLogContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: { dispose(): void };
  private readonly pending = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    tasks: TasksModel,
    private readonly requester: () => Requester | undefined,
  ) {
    this.subscription = tasks.onDidChange(() => this.refreshOpenLogs());
  }

  /** Logs shown in a tab follow their task: fetched again a second after it changed. */
  private refreshOpenLogs(): void {
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.scheme !== TASK_LOG_SCHEME) continue;
      const key = document.uri.toString();
      if (this.pending.has(key)) continue;
      this.pending.set(
        key,
        setTimeout(() => {
          this.pending.delete(key);
          this.changed.fire(document.uri);
        }, 1000),
      );
    }
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const taskId = taskIdOf(uri);
    if (!taskId) throw new Error(`not a task log: ${uri.toString()}`);
    const requester = this.requester();
    if (!requester) return `The Conclave server is not running; the log of task ${taskId} cannot be read.\n`;
    const { text } = await requester.sendRequest(lsp.taskLog, { taskId });
    return text.endsWith('\n') || text === '' ? text : `${text}\n`;
  }

  dispose(): void {
    this.subscription.dispose();
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.changed.dispose();
  }
}
