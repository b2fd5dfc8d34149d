// How an approval is presented, as a pure function: modal or notification, the message,
// and the buttons (one per option). Used by the approvals UI and by the tests.

import type { ApprovalDecision, ApprovalRequest } from '../lsp_ext';
import { approvalKindLabel } from './tasks';

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

export function presentApproval(approval: ApprovalRequest): ApprovalPresentation {
  const modal = approval.severity === 'high' || approval.severity === 'critical';
  const detailParts = [plainText(approval.detail)];
  if (approval.proposedSolution) detailParts.push(`Proposed: ${plainText(approval.proposedSolution)}`);
  if (approval.command) detailParts.push(`Command: ${approval.command}`);
  const detail = detailParts.filter((p) => p.length > 0).join('\n\n');
  const header = `Conclave (${approvalKindLabel(approval.kind)}, ${approval.severity}): ${approval.title}`;
  return {
    modal,
    // A notification has no separate detail: put it in the message, kept short.
    message: modal ? header : `${header}${detail ? ` — ${truncate(detail.replace(/\s+/g, ' '), 300)}` : ''}`,
    detail,
    buttons: approval.options.map((option) => ({ title: option.title, decision: option.id })),
    showDiff: approval.kind === 'fileChange' && !!approval.diff,
  };
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
