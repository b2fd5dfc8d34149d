// The Tasks tree as a pure model: pending approvals at the top, then tasks (newest first),
// each with the top agent's final report once it is written, its subtasks and its checks.
// Fed by conclave/taskUpdated, conclave/listTasks, conclave/requestApproval and
// conclave/listApprovals. Imports nothing from 'vscode'.

import type {
  ApprovalRequest,
  CheckCounts,
  CheckedBy,
  CheckResult,
  FinalReport,
  SubtaskSummary,
  TaskDetail,
  TaskStatus,
  TaskSummary,
} from '../lsp_ext';
import { Emitter } from './event';
import { reportOutcome } from './report';
import { compareTimestamps, isEarlier, readableTime } from './time';
import { usageDetail, usageLabel } from './usage';

export type TaskTreeNode =
  | { kind: 'approval'; approval: ApprovalRequest }
  | { kind: 'task'; task: TaskSummary }
  | { kind: 'subtask'; task: TaskSummary; subtask: SubtaskSummary }
  /** The task's checks, counted; its children come from the task's detail. */
  | { kind: 'checks'; task: TaskSummary }
  /** The top agent's final report on the finished task, from the task's detail. */
  | { kind: 'report'; task: TaskSummary; report: FinalReport }
  | { kind: 'check'; task: TaskSummary; check: CheckResult; index: number };

/** What a tree row shows; the glue turns it into a vscode.TreeItem. */
export interface TreeRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id, e.g. "sync~spin". */
  icon: string;
  /** A theme color id for the icon, if any. */
  color?: string;
  contextValue: string;
  collapsible: boolean;
  /** A collapsible row that starts collapsed. */
  collapsed?: boolean;
}

const FINISHED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export function isFinished(status: string): boolean {
  return FINISHED.has(status);
}

export function statusIcon(status: string): { icon: string; color?: string } {
  switch (status) {
    case 'queued':
      return { icon: 'clock' };
    case 'planning':
      return { icon: 'lightbulb' };
    case 'awaiting_approval':
      return { icon: 'question', color: 'notificationsWarningIcon.foreground' };
    case 'pending':
      return { icon: 'circle-outline' };
    case 'running':
      return { icon: 'sync~spin' };
    case 'recovering':
      return { icon: 'refresh', color: 'notificationsInfoIcon.foreground' };
    case 'escalated':
      return { icon: 'warning', color: 'notificationsWarningIcon.foreground' };
    case 'completed':
      return { icon: 'pass', color: 'testing.iconPassed' };
    case 'failed':
      return { icon: 'error', color: 'testing.iconFailed' };
    case 'cancelled':
      return { icon: 'circle-slash' };
    default:
      return { icon: 'circle-outline' };
  }
}

export type AgentNameResolver = (agentId: string) => string | undefined;
/** The task's detail when it was fetched (see TaskDetails). */
export type DetailResolver = (taskId: string) => TaskDetail | undefined;

export class TasksModel {
  private readonly tasks = new Map<string, TaskSummary>();
  private readonly approvals = new Map<string, ApprovalRequest>();
  private readonly changed = new Emitter<void>();
  /** Fires after any change; the tree refreshes on it. */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly agentName: AgentNameResolver = () => undefined,
    private readonly detail: DetailResolver = () => undefined,
  ) {}

  /** A task's detail arrived or changed: rows drawn from it are drawn again. */
  detailChanged(taskId: string): void {
    if (this.tasks.has(taskId)) this.changed.fire();
  }

  /** conclave/taskUpdated: replaces the task unless the update is older than what we hold. */
  updateTask(task: TaskSummary): void {
    const known = this.tasks.get(task.taskId);
    if (known && isEarlier(task.updatedAt, known.updatedAt)) return;
    this.tasks.set(task.taskId, task);
    this.changed.fire();
  }

  /** conclave/listTasks: the full list. */
  setTasks(tasks: TaskSummary[]): void {
    this.tasks.clear();
    for (const task of tasks) this.tasks.set(task.taskId, task);
    this.changed.fire();
  }

  /** conclave/requestApproval arrived (or listApprovals reported it). */
  addApproval(approval: ApprovalRequest): void {
    this.approvals.set(approval.approvalId, approval);
    this.changed.fire();
  }

  /** The approval was answered or resolved. */
  removeApproval(approvalId: string): void {
    if (this.approvals.delete(approvalId)) this.changed.fire();
  }

  /** conclave/listApprovals: everything still pending. */
  setApprovals(approvals: ApprovalRequest[]): void {
    this.approvals.clear();
    for (const approval of approvals) this.approvals.set(approval.approvalId, approval);
    this.changed.fire();
  }

  task(taskId: string): TaskSummary | undefined {
    return this.tasks.get(taskId);
  }

  allTasks(): TaskSummary[] {
    return [...this.tasks.values()].sort((a, b) => compareTimestamps(b.createdAt, a.createdAt));
  }

  pendingApprovals(): ApprovalRequest[] {
    return [...this.approvals.values()].sort((a, b) => compareTimestamps(a.createdAt, b.createdAt));
  }

  /** Top-level rows: pending approvals first, then tasks newest first. */
  roots(): TaskTreeNode[] {
    return [
      ...this.pendingApprovals().map((approval): TaskTreeNode => ({ kind: 'approval', approval })),
      ...this.allTasks().map((task): TaskTreeNode => ({ kind: 'task', task })),
    ];
  }

  children(node: TaskTreeNode): TaskTreeNode[] {
    const task = node.kind === 'approval' ? undefined : (this.tasks.get(node.task.taskId) ?? node.task);
    if (node.kind === 'task' && task) {
      const rows: TaskTreeNode[] = [];
      // The outcome first, as the report itself puts it: what the top concluded.
      const report = this.finalReport(task.taskId);
      if (report) rows.push({ kind: 'report', task, report });
      rows.push(...task.subtasks.map((subtask): TaskTreeNode => ({ kind: 'subtask', task, subtask })));
      if (task.checkCounts) rows.push({ kind: 'checks', task });
      return rows;
    }
    if (node.kind === 'checks' && task) {
      const checks = this.detail(task.taskId)?.checks ?? [];
      return checks.map((check, index): TaskTreeNode => ({ kind: 'check', task, check, index }));
    }
    return [];
  }

  /** The top agent's final report on a task, once written and its detail fetched. */
  finalReport(taskId: string): FinalReport | undefined {
    return this.detail(taskId)?.finalReport ?? undefined;
  }

  /** The row above a node (the tree reveals nodes through it). */
  parent(node: TaskTreeNode): TaskTreeNode | undefined {
    switch (node.kind) {
      case 'subtask':
      case 'checks':
      case 'report':
        return { kind: 'task', task: node.task };
      case 'check':
        return { kind: 'checks', task: node.task };
      default:
        return undefined;
    }
  }

  /** The files whose subtask is running or recovering right now ("being generated"). */
  filesBeingGenerated(): Set<string> {
    const files = new Set<string>();
    for (const task of this.tasks.values()) {
      for (const subtask of task.subtasks) {
        if (subtask.status === 'running' || subtask.status === 'recovering') {
          for (const uri of subtask.files ?? []) files.add(uri);
        }
      }
    }
    return files;
  }

  /** Tasks that are not finished. */
  activeTasks(): TaskSummary[] {
    return this.allTasks().filter((task) => !isFinished(task.status));
  }

  row(node: TaskTreeNode): TreeRow {
    switch (node.kind) {
      case 'approval': {
        const a = node.approval;
        const critical = a.severity === 'high' || a.severity === 'critical';
        return {
          id: `approval:${a.approvalId}`,
          label: a.title,
          description: `${approvalKindLabel(a.kind)} · ${a.severity} · awaiting your answer`,
          tooltip: [a.title, '', a.detail, a.proposedSolution ? `\nProposed: ${a.proposedSolution}` : '']
            .join('\n')
            .trim(),
          icon: critical ? 'warning' : 'question',
          color: critical ? 'notificationsErrorIcon.foreground' : 'notificationsWarningIcon.foreground',
          contextValue: 'approval',
          collapsible: false,
        };
      }
      case 'task': {
        const t = node.task;
        const { icon, color } = statusIcon(t.status);
        const done = t.subtasks.filter((s) => s.status === 'completed').length;
        const parts = [statusLabel(t.status)];
        // Work nobody could run says so next to its status, never just "completed", and
        // so does work only the team's own test ran.
        if (t.unchecked) parts.push('not checked');
        else if (t.status === 'completed' && needsReview(t.checkedBy)) parts.push('review');
        if (t.parked) parts.push('parked');
        if (t.revertedBy) parts.push(revertedLabel(t.revertedBy));
        if (t.subtasks.length > 0) parts.push(`${done}/${t.subtasks.length}`);
        const progress = progressLabel(t);
        if (progress) parts.push(progress);
        if (t.usageTotal) parts.push(usageLabel(t.usageTotal));
        const report = this.finalReport(t.taskId);
        const tooltip = [`${t.title}`, `Status: ${statusLabel(t.status)}`];
        if (report) tooltip.push(`Final report by ${report.by}: ${reportOutcome(report)}`);
        if (t.unchecked) tooltip.push(t.unchecked);
        else if (t.status === 'completed' && t.checkedBy) tooltip.push(checkedByLabel(t.checkedBy));
        if (t.parked) tooltip.push(`Parked: ${t.parked}`);
        if (t.revertedBy) tooltip.push(revertedTooltip(t.revertedBy));
        if (progress) tooltip.push(`Progress: ${progress}`);
        if (t.usageTotal) tooltip.push(`Tokens: ${usageDetail(t.usageTotal)}`);
        if (t.checkCounts) tooltip.push(`Checks: ${checkCountsLabel(t.checkCounts)}`);
        if (t.recovery)
          tooltip.push(
            `Recovery: ${t.recovery.action} ${t.recovery.attempt}/${t.recovery.maxAttempts} — ${t.recovery.message}`,
          );
        tooltip.push(`Task id: ${t.taskId}`);
        return {
          // VS Code keeps the collapsed state of an id that had no children: a task that gains
          // its subtasks gets a new id, so it shows them (Expanded) while it runs.
          // Likewise a task without subtasks that gains its final report.
          id:
            t.subtasks.length > 0
              ? `task:${t.taskId}`
              : report
                ? `task:${t.taskId}:reported`
                : `task:${t.taskId}:unplanned`,
          label: t.title,
          description: parts.join(' · '),
          tooltip: tooltip.join('\n'),
          icon,
          color,
          // "task.completed" / "task.retryable" can be undone; ".undone" once taken back.
          contextValue: `task.${isFinished(t.status) ? (t.status === 'completed' ? 'completed' : 'retryable') : 'active'}${t.revertedBy ? '.undone' : ''}`,
          collapsible: t.subtasks.length > 0 || report !== undefined,
        };
      }
      case 'report': {
        const r = node.report;
        return {
          id: `report:${node.task.taskId}`,
          label: `Final report by ${r.by}`,
          description: reportOutcome(r),
          tooltip: [
            `Final report by ${r.by}, ${readableTime(r.at)}`,
            '',
            clipLines(r.text.trim(), 20),
            '',
            'Click to read it whole.',
          ].join('\n'),
          icon: 'report',
          contextValue: 'report',
          collapsible: false,
        };
      }
      case 'subtask': {
        const s = node.subtask;
        const { icon, color } = statusIcon(s.status);
        const assignee = s.assignee
          ? (this.agentName(s.assignee) ?? s.assigneeName ?? shortId(s.assignee))
          : 'unassigned';
        const attempts = s.attempts === 1 ? '1 attempt' : `${s.attempts} attempts`;
        const tooltip = [
          s.description,
          `Status: ${statusLabel(s.status)}`,
          `Assignee: ${assignee}`,
          `Attempts: ${s.attempts}`,
        ];
        if (s.files && s.files.length > 0) tooltip.push(`Files:\n${s.files.map((f) => `  ${f}`).join('\n')}`);
        return {
          id: `subtask:${node.task.taskId}:${s.subtaskId}`,
          label: s.description,
          description: `${statusLabel(s.status)} · ${assignee} · ${attempts}`,
          tooltip: tooltip.join('\n'),
          icon,
          color,
          contextValue: 'subtask',
          collapsible: false,
        };
      }
      case 'checks': {
        const task = this.tasks.get(node.task.taskId) ?? node.task;
        const counts = task.checkCounts ?? { passed: 0, failed: 0, skipped: 0, at: '' };
        const icon =
          counts.failed > 0
            ? statusIcon('failed')
            : counts.passed > 0
              ? statusIcon('completed')
              : { icon: 'circle-slash' };
        return {
          id: `checks:${task.taskId}`,
          label: 'Checks',
          description: checkCountsLabel(counts),
          tooltip: `What the team checked after the code was written: ${checkCountsLabel(counts)}.`,
          ...icon,
          contextValue: 'checks',
          collapsible: true,
          // Failures are shown at once; checks that all passed stay folded away.
          collapsed: counts.failed === 0,
        };
      }
      case 'check': {
        const c = node.check;
        const { icon, color } = checkIcon(c.status);
        const rules = c.rules && c.rules.length > 0 ? c.rules.join(', ') : undefined;
        const description = [c.status, c.kind, rules].filter(Boolean).join(' · ');
        const tooltip = [`${c.kind}: ${c.name}`, `Status: ${c.status}`];
        if (rules) tooltip.push(`Rules: ${rules}`);
        if (c.files.length > 0) tooltip.push(`Files: ${c.files.join(', ')}`);
        if (c.detail.trim()) tooltip.push('', clipLines(c.detail.trim(), 12), '', 'Click to read it whole.');
        return {
          id: `check:${node.task.taskId}:${node.index}:${c.at}`,
          label: c.name,
          description,
          tooltip: tooltip.join('\n'),
          icon,
          color,
          contextValue: `check.${c.status}`,
          collapsible: false,
        };
      }
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/**
 * The percentage worth showing: a running task's progress, 100% once completed, and none for
 * a failed or cancelled one (its progress stops short, "99%" would read as nearly done).
 */
export function progressLabel(task: Pick<TaskSummary, 'status' | 'progress'>): string | undefined {
  if (task.status === 'failed' || task.status === 'cancelled') return undefined;
  if (task.status === 'completed') return '100%';
  return `${Math.min(99, Math.max(0, Math.floor(task.progress)))}%`;
}

/** "2 passed · 1 failed [python.stub] · 1 skipped": what is there, failures with their rules. */
export function checkCountsLabel(counts: CheckCounts): string {
  const parts: string[] = [];
  if (counts.passed > 0) parts.push(`${counts.passed} passed`);
  if (counts.failed > 0) {
    const rules = counts.failedRules && counts.failedRules.length > 0 ? ` [${counts.failedRules.join(', ')}]` : '';
    parts.push(`${counts.failed} failed${rules}`);
  }
  if (counts.skipped > 0) parts.push(`${counts.skipped} skipped`);
  return parts.length > 0 ? parts.join(' · ') : 'none';
}

export function checkIcon(status: string): { icon: string; color?: string } {
  switch (status) {
    case 'passed':
      return statusIcon('completed');
    case 'failed':
      return statusIcon('failed');
    default:
      return { icon: 'circle-slash' };
  }
}

/** The first `max` lines of `text`, saying how many more there are. */
function clipLines(text: string, max: number): string {
  const lines = text.split('\n');
  return lines.length <= max ? text : [...lines.slice(0, max), `… ${lines.length - max} more lines`].join('\n');
}

/** A taken-back task's mark in the tree. */
export function revertedLabel(by: 'failure' | 'undo'): string {
  return by === 'undo' ? 'undone' : 'changes put back';
}

function revertedTooltip(by: 'failure' | 'undo'): string {
  return by === 'undo'
    ? 'Undone: its files were put back as before the task.'
    : 'Its files were put back as before the task when it failed.';
}

/** A finished task whose changes are still in place: it can be undone. */
export function isUndoable(task: Pick<TaskSummary, 'status' | 'revertedBy'>): boolean {
  return isFinished(task.status) && !task.revertedBy;
}

/** A completion that only the team's own test checked, or that its test disputed: the
 * person should review it. */
export function needsReview(checkedBy: CheckedBy | undefined): boolean {
  return checkedBy === 'ownTestOnly' || checkedBy === 'disputed';
}

/** What ran a completed task's code, in a line. */
export function checkedByLabel(checkedBy: CheckedBy): string {
  switch (checkedBy) {
    case 'projectTests':
      return 'Checked by: tests in the project, or verify.command';
    case 'taskExamples':
      return "Checked by: the task's own examples, and a test the team wrote";
    case 'ownTestOnly':
      return 'Checked by: only a test the team wrote itself. Review the change.';
    case 'disputed':
      return "Checked by: a test the team wrote, which the code fails where other evidence gives what the code gives (a second solution written from the task alone, or the code's own inverse function). Review the change.";
    case 'nothing':
      return 'Checked by: nothing, no test ran code (no code, or the checks are off)';
  }
}

export function statusLabel(status: TaskStatus | string): string {
  return status.replace(/_/g, ' ');
}

export function approvalKindLabel(kind: string): string {
  switch (kind) {
    case 'fileChange':
      return 'file change';
    default:
      return kind;
  }
}

export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}
