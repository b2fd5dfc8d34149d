// "Conclave: Undo Task" on screen: the task picked (palette) or the tree item it was run
// on, the whole diff as a read-only document (conclave-undo:/<taskId>/….diff), the
// question as a modal, the outcome as a message. The flow itself is model/undo.ts.

import * as vscode from 'vscode';
import { pickTask } from './commands';
import { isUndoable, shortId, type TaskTreeNode } from './model/tasks';
import { runUndo, type UndoChoice, type UndoQuestion } from './model/undo';
import type { Session } from './session';

export const UNDO_SCHEME = 'conclave-undo';

/** The diffs shown before undoing, as read-only virtual documents. */
class UndoDiffProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  show(uri: vscode.Uri, text: string): void {
    this.contents.set(uri.toString(), text);
    this.changed.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function registerUndo(session: Session): vscode.Disposable[] {
  const diffs = new UndoDiffProvider();
  const screen = {
    async showDiff(taskId: string, text: string): Promise<void> {
      const uri = vscode.Uri.from({ scheme: UNDO_SCHEME, path: `/${taskId}/undo-${shortId(taskId)}.diff` });
      diffs.show(uri, text);
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(document, { preview: true });
    },
    async ask(question: UndoQuestion): Promise<UndoChoice | undefined> {
      const titles = question.choices.map((c) => c.title);
      const chosen = await vscode.window.showWarningMessage(
        question.message,
        { modal: true, detail: question.detail },
        ...titles,
      );
      return question.choices.find((c) => c.title === chosen);
    },
  };
  return [
    diffs,
    vscode.workspace.registerTextDocumentContentProvider(UNDO_SCHEME, diffs),
    vscode.commands.registerCommand('conclave.undoTask', async (node?: TaskTreeNode | string) => {
      try {
        const client = session.runningClient();
        if (!client) return;
        const taskId = await pickTask(session, node, isUndoable, 'Finished task to undo');
        if (!taskId) return;
        const title = session.tasks.task(taskId)?.title ?? taskId;
        const outcome = await runUndo(client, taskId, title, screen);
        if (outcome.kind === 'cancelled') return;
        session.output.info(`Conclave: ${outcome.message}`);
        void vscode.window.showInformationMessage(`Conclave: ${outcome.message}`);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        session.output.error(`conclave.undoTask: ${message}`);
        void vscode.window.showErrorMessage(`Conclave: ${message}`);
      }
    }),
  ];
}
