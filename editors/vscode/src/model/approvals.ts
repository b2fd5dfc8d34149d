// Approvals without 'vscode': how one is presented (modal or notification, message, one
// button per option, diff first for file changes) and the flow that answers it.

import * as lsp from '../lsp_ext';
import type { ApprovalAnswer, ApprovalDecision, ApprovalRequest } from '../lsp_ext';
import { Emitter } from './event';
import type { Requester } from './rpc';
import { approvalKindLabel, type TasksModel } from './tasks';

export interface ApprovalPresentation {
  modal: boolean;
  message: string;
  detail: string;
  buttons: { title: string; decision: ApprovalDecision }[];
  /** fileChange approvals first show a diff of before/after. */
  showDiff: boolean;
}

/** Strips the markdown the server puts in `detail` down to readable plain text. */
export function plainText(markdown: string): string {
  return markdown
    .replace(/```[a-z]*\n?/gi, '')
    .replace(/\*\*(.+?)\*\*/g, '$1')
    .replace(/`([^`]+)`/g, '$1')
    .replace(/^#+\s*/gm, '')
    .trim();
}

/** Button labels short enough for a notification (VS Code cuts long ones). */
const SHORT_LABELS: Record<string, string> = {
  approve: 'Approve',
  reject: 'Reject',
  retry: 'Retry',
  reassign: 'Reassign',
  modify: 'Modify…',
  abort: 'Abort',
};

export function buttonLabel(option: { id: string; title: string }): string {
  const known = SHORT_LABELS[option.id];
  if (known) return known;
  return option.title.length > 14 ? `${option.title.slice(0, 13)}…` : option.title;
}

export function presentApproval(approval: ApprovalRequest): ApprovalPresentation {
  const modal = approval.severity === 'high' || approval.severity === 'critical';
  const detailParts = [plainText(approval.detail)];
  // The buttons are short: say in words what each one does when its title says more.
  const explained = approval.options
    .filter((option) => buttonLabel(option).replace(/…$/, '') !== option.title)
    .map((option) => `${buttonLabel(option).replace(/…$/, '')}: ${option.title.toLowerCase()}`);
  if (approval.proposedSolution) detailParts.push(`Proposed: ${plainText(approval.proposedSolution)}`);
  if (approval.command) detailParts.push(`Command: ${approval.command}`);
  if (explained.length > 0) detailParts.push(explained.join(' · '));
  const detail = detailParts.filter((p) => p.length > 0).join('\n\n');
  const header = `Conclave (${approvalKindLabel(approval.kind)}, ${approval.severity}): ${approval.title}`;
  return {
    modal,
    // A notification has no separate detail: put it in the message, kept short.
    message: modal ? header : `${header}${detail ? ` — ${truncate(detail.replace(/\s+/g, ' '), 300)}` : ''}`,
    detail,
    buttons: approval.options.map((option) => ({ title: buttonLabel(option), decision: option.id })),
    showDiff: approval.kind === 'fileChange' && !!approval.diff,
  };
}

/**
 * What "Modify…" starts from: the subtask's current description (the approval's
 * `subtaskDescription`, else the subtask in the task the approval is about), so the user
 * edits it rather than retyping it; the advice sentence only when the subtask is unknown.
 */
export function modifyDefault(approval: ApprovalRequest, tasks: TasksModel): string {
  if (approval.subtaskDescription) return approval.subtaskDescription;
  const subtask = approval.subtaskId
    ? tasks.task(approval.taskId)?.subtasks.find((s) => s.subtaskId === approval.subtaskId)
    : undefined;
  return subtask?.description ?? approval.proposedSolution ?? '';
}

/** Quick-pick label for Show Pending Approvals. */
export function approvalPickLabel(approval: ApprovalRequest): { label: string; description: string; detail: string } {
  return {
    label: approval.title,
    description: `${approvalKindLabel(approval.kind)} · ${approval.severity}`,
    detail: truncate(plainText(approval.detail).replace(/\s+/g, ' '), 200),
  };
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** What came of an answer the user gave. */
export type AnswerOutcome =
  | { kind: 'resolved' }
  /** Someone answered first (another editor, the command line) or it no longer exists. */
  | { kind: 'gone'; message: string }
  /** The server refused or could not be reached: the approval stays pending. */
  | { kind: 'failed'; message: string };

/**
 * Asks the user; resolves with the answer, or undefined when the prompt was dismissed
 * (closed, Escape, or an input box left empty). The glue shows modals, notifications, diffs.
 */
export type ApprovalPrompt = (
  approval: ApprovalRequest,
  view: ApprovalPresentation,
) => Promise<ApprovalAnswer | undefined>;

/**
 * The approval flow, shared by conclave/requestApproval and by answers given later (the
 * Tasks tree, Show Pending Approvals). Pending approvals live in the TasksModel (they are
 * the first rows of the Tasks tree).
 *
 * Every answer goes through conclave/resolveApproval, which acknowledges it: the server
 * stops waiting for a conclave/requestApproval response after `editor.approvalTimeoutMs`
 * (and when someone else answers), and a response sent after that would be dropped without
 * a word while the approval stays pending. With resolveApproval an answer is either
 * accepted, refused with a reason, or known to be too late (1002), and the tree follows.
 * Dismissing a prompt never decides anything: the approval stays pending.
 */
export class ApprovalsModel {
  private readonly answered = new Emitter<{ approval: ApprovalRequest; outcome: AnswerOutcome }>();
  /** Fires after every answer the user gave, with what came of it. */
  readonly onDidAnswer = this.answered.event;

  constructor(
    private readonly tasks: TasksModel,
    private readonly requester: () => Requester | undefined,
  ) {}

  /** Handler of conclave/requestApproval: the answer given, or null when dismissed. */
  async onRequest(approval: ApprovalRequest, prompt: ApprovalPrompt): Promise<ApprovalAnswer | null> {
    this.tasks.addApproval(approval);
    const answer = await prompt(approval, presentApproval(approval));
    if (!answer) return null; // dismissed: stays pending, first row of the Tasks tree
    const outcome = await this.answer(approval, answer);
    // Resolved (or answered elsewhere): the response only ends the request; the server has
    // the decision already. Failed: the approval stays pending and the user was told why.
    return outcome.kind === 'failed' ? null : answer;
  }

  /** Sends the user's answer; the approval leaves the tree unless the server refused it. */
  async answer(approval: ApprovalRequest, answer: ApprovalAnswer): Promise<AnswerOutcome> {
    const requester = this.requester();
    if (!requester)
      return { kind: 'failed', message: 'the Conclave server is not running; the approval stays pending' };
    let outcome: AnswerOutcome;
    try {
      const { accepted } = await requester.sendRequest(lsp.resolveApproval, {
        approvalId: approval.approvalId,
        ...answer,
      });
      outcome = accepted
        ? { kind: 'resolved' }
        : { kind: 'failed', message: `the server did not accept “${answer.decision}”` };
    } catch (error) {
      if (errorCode(error) === lsp.ErrorCodes.ApprovalNotFound) {
        outcome = { kind: 'gone', message: `“${approval.title}” was already answered` };
      } else {
        const message = error instanceof Error ? error.message : String(error);
        outcome = { kind: 'failed', message: `${message}; the approval stays pending` };
      }
    }
    if (outcome.kind !== 'failed') this.tasks.removeApproval(approval.approvalId);
    this.answered.fire({ approval, outcome });
    return outcome;
  }

  /** conclave/listApprovals: everything still pending (after a restart too). */
  async refresh(): Promise<ApprovalRequest[]> {
    const requester = this.requester();
    if (!requester) return this.tasks.pendingApprovals();
    const { approvals } = await requester.sendRequest(lsp.listApprovals, {});
    this.tasks.setApprovals(approvals);
    return approvals;
  }

  dispose(): void {
    this.answered.dispose();
  }
}

/** The JSON-RPC error code of a rejected request (a ResponseError of any vscode-jsonrpc copy). */
export function errorCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
