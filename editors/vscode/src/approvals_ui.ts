// Approvals on screen: conclave/requestApproval as a modal (high/critical) or a notification,
// fileChange approvals preceded by a diff of before/after. The flow itself (answers through
// conclave/resolveApproval, dismissals leave the approval pending) is ApprovalsModel.

import * as vscode from 'vscode';
import * as lsp from './lsp_ext';
import { type ApprovalPresentation, approvalPickLabel, modifyDefault, presentApproval } from './model/approvals';
import type { ConclaveModels } from './model/feed';

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

export class ApprovalsUi implements vscode.Disposable {
  private readonly subscription: { dispose(): void };
  private readonly resolvedSubscription: { dispose(): void };

  constructor(
    private readonly models: ConclaveModels,
    private readonly diffs: DiffContentProvider,
    private readonly serverRunning: () => boolean,
  ) {
    this.subscription = models.approvals.onDidAnswer(({ approval, outcome }) => {
      if (outcome.kind !== 'failed') {
        void this.closeDiff(approval.approvalId);
        this.diffs.forget(approval.approvalId);
      }
      if (outcome.kind === 'gone') void vscode.window.showInformationMessage(`Conclave: ${outcome.message}.`);
      if (outcome.kind === 'failed') void vscode.window.showWarningMessage(`Conclave: ${outcome.message}.`);
    });
    // Decided elsewhere or withdrawn (the server says why with window/showMessage): its
    // diff goes away.
    this.resolvedSubscription = models.onApprovalResolved(({ approvalId }) => {
      void this.closeDiff(approvalId);
      this.diffs.forget(approvalId);
    });
  }

  /** Closes the diff tabs of an answered approval: what they propose is decided. */
  private async closeDiff(approvalId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs);
    const stale = tabs.filter(
      (tab) =>
        tab.input instanceof vscode.TabInputTextDiff &&
        tab.input.modified.scheme === DIFF_SCHEME &&
        tab.input.modified.path.startsWith(`/${approvalId}/`),
    );
    if (stale.length > 0) await vscode.window.tabGroups.close(stale, true);
  }

  private async showDiff(approval: lsp.ApprovalRequest): Promise<void> {
    if (!approval.diff) return;
    const { before, after } = this.diffs.uris(approval);
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(approval.diff.uri));
    await vscode.commands.executeCommand('vscode.diff', before, after, `Conclave proposes: ${file}`, { preview: true });
  }

  /** A modal or a notification with one button per option; undefined when dismissed. */
  private async prompt(
    approval: lsp.ApprovalRequest,
    view: ApprovalPresentation,
  ): Promise<lsp.ApprovalAnswer | undefined> {
    if (view.showDiff) await this.showDiff(approval);
    const titles = view.buttons.map((b) => b.title);
    const chosen = view.modal
      ? await vscode.window.showWarningMessage(view.message, { modal: true, detail: view.detail }, ...titles)
      : await vscode.window.showInformationMessage(view.message, ...titles);
    const button = view.buttons.find((b) => b.title === chosen);
    return button ? this.complete(approval, button.decision) : undefined;
  }

  /** `modify` needs the new description; an empty or cancelled input box is a dismissal. */
  private async complete(
    approval: lsp.ApprovalRequest,
    decision: lsp.ApprovalDecision,
  ): Promise<lsp.ApprovalAnswer | undefined> {
    if (decision !== 'modify') return { decision };
    const modifiedDescription = await vscode.window.showInputBox({
      title: `Conclave: modify “${approval.title}”`,
      prompt: 'The new description of the subtask',
      value: modifyDefault(approval, this.models.tasks),
      ignoreFocusOut: true,
    });
    if (modifiedDescription === undefined || modifiedDescription.trim() === '') return undefined;
    return { decision, modifiedDescription: modifiedDescription.trim() };
  }

  /** Handler of conclave/requestApproval. */
  onRequest(approval: lsp.ApprovalRequest): Promise<lsp.ApprovalAnswer | null> {
    return this.models.approvals.onRequest(approval, (a, view) => this.prompt(a, view));
  }

  /** Answers a pending approval later (a click in the Tasks tree, Show Pending Approvals). */
  async answerPending(approval: lsp.ApprovalRequest): Promise<void> {
    if (approval.diff) await this.showDiff(approval);
    const view = presentApproval(approval);
    const picked = await vscode.window.showQuickPick(
      view.buttons.map((b) => ({ label: b.title, decision: b.decision })),
      {
        title: `Conclave: ${approval.title}`,
        placeHolder: view.detail ? view.detail.replace(/\s+/g, ' ').slice(0, 200) : 'Your decision',
        ignoreFocusOut: true,
      },
    );
    if (!picked) return;
    const answer = await this.complete(approval, picked.decision);
    if (answer) await this.models.approvals.answer(approval, answer);
  }

  /** "Show Pending Approvals": the server's list, pick one, answer it. */
  async showPending(): Promise<void> {
    if (!this.serverRunning()) {
      void vscode.window.showWarningMessage('Conclave: the server is not running. Run "Conclave: Restart Server".');
      return;
    }
    const approvals = await this.models.approvals.refresh();
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

  dispose(): void {
    this.subscription.dispose();
    this.resolvedSubscription.dispose();
  }
}
