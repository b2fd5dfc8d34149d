// The palette and tree commands.

import * as path from 'node:path';
import * as vscode from 'vscode';
import * as lsp from './lsp_ext';
import { isFinished, progressLabel, type TaskTreeNode } from './model/tasks';
import { readableTime } from './model/time';
import { checkUri } from './check_output';
import { reportUri } from './final_report';
import type { Session } from './session';
import { taskLogUri } from './task_log';
import { whiteboardUri } from './whiteboard';

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The task a command is about: the tree node it was invoked on, or one the user picks. */
export async function pickTask(
  session: Session,
  node: TaskTreeNode | string | undefined,
  filter: (task: lsp.TaskSummary) => boolean,
  placeHolder: string,
): Promise<string | undefined> {
  if (typeof node === 'string') return node;
  if (node && node.kind !== 'approval') return node.task.taskId;
  const candidates = session.tasks.allTasks().filter(filter);
  if (candidates.length === 0) {
    void vscode.window.showInformationMessage(`Conclave: no task to choose from (${placeHolder.toLowerCase()}).`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    candidates.map((task) => ({
      label: task.title,
      description: `${task.status.replace(/_/g, ' ')}${progressLabel(task) ? ` · ${progressLabel(task)}` : ''}`,
      detail: `submitted ${readableTime(task.createdAt)}`,
      taskId: task.taskId,
    })),
    { placeHolder },
  );
  return picked?.taskId;
}

function insideRoot(root: string | undefined, file: string): boolean {
  if (!root) return false;
  const relative = path.relative(root, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

async function openText(content: string, language: string): Promise<void> {
  const document = await vscode.workspace.openTextDocument({ content, language });
  await vscode.window.showTextDocument(document, { preview: true });
}

/**
 * What VS Code passes a command: whatever its caller gave (a tree node, a URI, nothing).
 * Each command below declares the arguments it takes, which `unknown[]` would not allow.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- registerCommand's own type
type CommandArgs = any[];

export function registerCommands(session: Session): vscode.Disposable[] {
  const register = (id: string, run: (...args: CommandArgs) => Promise<void>) =>
    vscode.commands.registerCommand(id, async (...args: CommandArgs) => {
      try {
        await run(...args);
      } catch (error) {
        session.output.error(`${id}: ${errorText(error)}`);
        void vscode.window.showErrorMessage(`Conclave: ${errorText(error)}`);
      }
    });

  return [
    register('conclave.submitTask', async () => {
      const client = session.runningClient();
      if (!client) return;
      const editor = vscode.window.activeTextEditor;
      const selection = editor && !editor.selection.isEmpty ? editor.selection : undefined;
      const description = await vscode.window.showInputBox({
        title: 'Conclave: Submit Task',
        prompt: 'What should the team do?',
        value: selection ? editor!.document.getText(selection) : '',
        ignoreFocusOut: true,
        validateInput: (value) => (value.trim() ? undefined : 'Describe the task'),
      });
      if (!description?.trim()) return;
      const params: lsp.SubmitTaskParams = { description: description.trim() };
      // The active file is context only when it is inside the workspace (the server refuses
      // paths outside its root with 1005).
      if (
        editor &&
        editor.document.uri.scheme === 'file' &&
        insideRoot(session.workspaceRoot(), editor.document.uri.fsPath)
      ) {
        const uri = editor.document.uri.toString();
        params.context = { files: [uri] };
        if (selection) {
          params.context.selection = {
            uri,
            range: {
              start: { line: selection.start.line, character: selection.start.character },
              end: { line: selection.end.line, character: selection.end.character },
            },
          };
        }
      }
      const { taskId } = await client.sendRequest(lsp.submitTask, params);
      session.output.info(`Conclave: submitted task ${taskId}`);
      await vscode.commands.executeCommand('conclave.tasks.focus');
      await session.revealTask(taskId).catch(() => undefined);
    }),

    register('conclave.cancelTask', async (node?: TaskTreeNode | string) => {
      const client = session.runningClient();
      if (!client) return;
      const taskId = await pickTask(session, node, (t) => !isFinished(t.status), 'Task to cancel');
      if (!taskId) return;
      const { cancelled } = await client.sendRequest(lsp.cancelTask, { taskId });
      if (!cancelled) void vscode.window.showInformationMessage('Conclave: the task was already finishing.');
    }),

    register('conclave.retryTask', async (node?: TaskTreeNode | string) => {
      const client = session.runningClient();
      if (!client) return;
      const taskId = await pickTask(
        session,
        node,
        (t) => t.status === 'failed' || t.status === 'cancelled',
        'Failed or cancelled task to retry',
      );
      if (!taskId) return;
      await client.sendRequest(lsp.retryTask, { taskId });
      await session.revealTask(taskId).catch(() => undefined);
    }),

    register('conclave.openWhiteboard', async () => {
      const client = session.runningClient();
      if (!client) return;
      const { whiteboards } = await client.sendRequest(lsp.listWhiteboards, {});
      const label = (id: string) => {
        if (!id.startsWith('agent:')) return id;
        const agent = session.agents.get(id.slice('agent:'.length));
        return agent ? `agent: ${agent.name}` : id;
      };
      const picked = await vscode.window.showQuickPick(
        whiteboards.map((board) => ({
          label: label(board.id),
          description: `v${board.version} · updated ${readableTime(board.updatedAt)}`,
          id: board.id,
        })),
        { title: 'Conclave: Open Whiteboard', placeHolder: 'Whiteboard' },
      );
      if (!picked) return;
      // The ".md" path makes it markdown; setTextDocumentLanguage would close and reopen it.
      const document = await vscode.workspace.openTextDocument(whiteboardUri(picked.id));
      await vscode.window.showTextDocument(document, { preview: false });
    }),

    register('conclave.showPendingApprovals', () => session.approvals.showPending()),

    register('conclave.answerApproval', async (node?: TaskTreeNode) => {
      if (node?.kind === 'approval') await session.approvals.answerPending(node.approval);
      else await session.approvals.showPending();
    }),

    register('conclave.showErrorReport', async (node?: TaskTreeNode | string) => {
      const client = session.runningClient();
      if (!client) return;
      let taskId: string | undefined;
      if (typeof node === 'string') taskId = node;
      else if (node && node.kind !== 'approval') taskId = node.task.taskId;
      const report = await client.sendRequest(lsp.errorReport, taskId ? { taskId } : {});
      try {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.file(report.path));
        await vscode.window.showTextDocument(document, { preview: true });
      } catch {
        await openText(report.markdown, 'markdown');
      }
      session.output.info(`Conclave: error report at ${path.normalize(report.path)}`);
    }),

    register('conclave.showTaskLog', async (node?: TaskTreeNode | string) => {
      const client = session.runningClient();
      if (!client) return;
      const taskId = await pickTask(session, node, () => true, 'Task whose log to show');
      if (!taskId) return;
      const title = session.tasks.task(taskId)?.title ?? taskId;
      const document = await vscode.workspace.openTextDocument(taskLogUri(taskId, title));
      await vscode.window.showTextDocument(document, { preview: true });
    }),

    register('conclave.showFinalReport', async (node?: TaskTreeNode | string) => {
      const taskId = await pickTask(
        session,
        node,
        (t) => isFinished(t.status),
        'Finished task whose final report to show',
      );
      if (!taskId) return;
      const title = session.tasks.task(taskId)?.title ?? taskId;
      const document = await vscode.workspace.openTextDocument(reportUri(taskId, title));
      await vscode.window.showTextDocument(document, { preview: true });
    }),

    register('conclave.openCheck', async (node?: TaskTreeNode) => {
      if (node?.kind !== 'check') return;
      const document = await vscode.workspace.openTextDocument(checkUri(node.task.taskId, node.index, node.check));
      await vscode.window.showTextDocument(document, { preview: true });
    }),

    register('conclave.restartServer', () => session.restart()),

    register('conclave.revealTask', async (taskId?: string) => {
      if (taskId) await session.revealTask(taskId);
      else await vscode.commands.executeCommand('conclave.tasks.focus');
    }),

    register('conclave.refresh', () => session.refresh()),
  ];
}
