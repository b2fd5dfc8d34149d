// Approvals: conclave/requestApproval shown as a modal (high/critical) or a notification,
// fileChange approvals preceded by a diff; dismissing answers null so the approval stays
// pending (the Tasks tree and "Show Pending Approvals" keep it).

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import * as lsp from './lsp_ext';
import { approvalPickLabel, presentApproval } from './model/approvals';
import type { TasksModel } from './model/tasks';

export const DIFF_SCHEME = 'conclave-diff';

/** before/after contents of fileChange approvals, as read-only virtual documents. */
export class DiffContentProvider implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();

  uris(approval: lsp.ApprovalRequest): { before: vscode.Uri; after: vscode.Uri } {
    const diff = approval.diff!;
    const name = vscode.Uri.parse(diff.uri).path.split('/').pop() ?? 'file';
    const before = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${approval.approvalId}/before/${name}` });
    const after = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${approval.approvalId}/after/${name}` });
    this.contents.set(before.toString(), diff.before);
    this.contents.set(after.toString(), diff.after);
    return { before, after };
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  forget(approvalId: string): void {
    for (const key of [...this.contents.keys()]) if (key.includes(approvalId)) this.contents.delete(key);
  }
}

export class ApprovalsUi {
  constructor(
    private readonly tasks: TasksModel,
    private readonly diffs: DiffContentProvider,
    private readonly client: () => LanguageClient | undefined,
  ) {}

  private async showDiff(approval: lsp.ApprovalRequest): Promise<void> {
    if (!approval.diff) return;
    const { before, after } = this.diffs.uris(approval);
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(approval.diff.uri));
    await vscode.commands.executeCommand('vscode.diff', before, after, `Conclave proposes: ${file}`, { preview: true });
  }

  /** Asks the user; undefined when dismissed. */
  private async ask(approval: lsp.ApprovalRequest): Promise<lsp.ApprovalAnswer | undefined> {
    const view = presentApproval(approval);
    if (view.showDiff) await this.showDiff(approval);
    const titles = view.buttons.map((b) => b.title);
    const chosen = view.modal
      ? await vscode.window.showWarningMessage(view.message, { modal: true, detail: view.detail }, ...titles)
      : await vscode.window.showInformationMessage(view.message, ...titles);
    const button = view.buttons.find((b) => b.title === chosen);
    if (!button) return undefined;
    return this.complete(approval, button.decision);
  }

  private async complete(
    approval: lsp.ApprovalRequest,
    decision: lsp.ApprovalDecision,
  ): Promise<lsp.ApprovalAnswer | undefined> {
    if (decision !== 'modify') return { decision };
    const modifiedDescription = await vscode.window.showInputBox({
      title: `Conclave: modify “${approval.title}”`,
      prompt: 'The new description of the subtask',
      value: approval.proposedSolution ?? '',
      ignoreFocusOut: true,
    });
    if (modifiedDescription === undefined || modifiedDescription.trim() === '') return undefined;
    return { decision, modifiedDescription };
  }

  /** Handler of conclave/requestApproval. */
  async onRequest(approval: lsp.ApprovalRequest, token: vscode.CancellationToken): Promise<lsp.ApprovalAnswer | null> {
    this.tasks.addApproval(approval);
    const answer = await this.ask(approval);
    if (token.isCancellationRequested) {
      // Answered elsewhere (another editor, conclave/resolveApproval): it is no longer pending.
      this.tasks.removeApproval(approval.approvalId);
      this.diffs.forget(approval.approvalId);
      return null;
    }
    if (!answer) return null; // dismissed: stays pending, still in the Tasks tree
    this.tasks.removeApproval(approval.approvalId);
    this.diffs.forget(approval.approvalId);
    return answer;
  }

  /** Answers a pending approval later (tree click or Show Pending Approvals). */
  async answerPending(approval: lsp.ApprovalRequest): Promise<void> {
    const client = this.client();
    if (!client?.isRunning()) return;
    if (approval.diff) await this.showDiff(approval);
    const picked = await vscode.window.showQuickPick(
      approval.options.map((o) => ({ label: o.title, decision: o.id })),
      { title: `Conclave: ${approval.title}`, placeHolder: 'Your decision', ignoreFocusOut: true },
    );
    if (!picked) return;
    const answer = await this.complete(approval, picked.decision);
    if (!answer) return;
    try {
      await client.sendRequest(lsp.resolveApproval, { approvalId: approval.approvalId, ...answer });
    } catch (error) {
      void vscode.window.showWarningMessage(`Conclave: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.tasks.removeApproval(approval.approvalId);
    this.diffs.forget(approval.approvalId);
  }

  /** "Show Pending Approvals": list from the server, pick one, answer it. */
  async showPending(): Promise<void> {
    const client = this.client();
    if (!client?.isRunning()) {
      void vscode.window.showWarningMessage('Conclave: the server is not running.');
      return;
    }
    const { approvals } = await client.sendRequest(lsp.listApprovals, {});
    this.tasks.setApprovals(approvals);
    if (approvals.length === 0) {
      void vscode.window.showInformationMessage('Conclave: no approval is pending.');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      approvals.map((approval) => ({ ...approvalPickLabel(approval), approval })),
      { title: 'Conclave: pending approvals', matchOnDescription: true, matchOnDetail: true },
    );
    if (picked) await this.answerPending(picked.approval);
  }
}
