// A finished task's final report as a read-only Markdown document
// (conclave-report:/<taskId>/<title>-final-report.md), headed by the top agent who wrote it:
// one click away from the report's row under the task in the Tasks tree.

import * as vscode from 'vscode';
import type { TaskDetails } from './model/details';
import { reportDocument, reportPath, reportTaskId } from './model/report';

export const REPORT_SCHEME = 'conclave-report';

export function reportUri(taskId: string, title: string): vscode.Uri {
  return vscode.Uri.from({ scheme: REPORT_SCHEME, path: reportPath(taskId, title) });
}

export class FinalReportProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(private readonly details: TaskDetails) {
    // A document opened before the report was written shows it once it arrives.
    this.subscription = details.onDidChange((taskId) => {
      for (const document of vscode.workspace.textDocuments) {
        if (document.uri.scheme === REPORT_SCHEME && reportTaskId(document.uri.path) === taskId) {
          this.changed.fire(document.uri);
        }
      }
    });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const taskId = reportTaskId(uri.path);
    if (!taskId) throw new Error(`not a final report: ${uri.toString()}`);
    const detail = await this.details.ensure(taskId);
    if (!detail) return `# Final report\n\n_The Conclave server could not give the detail of task ${taskId}._\n`;
    return reportDocument(detail);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
