// The status-bar text as a pure model: "idle", "N running", what the unfinished tasks
// spent ("12.3k tokens · $0.0042"), "↻ retry 2/3 in 4 s", "⚠ escalated", "✖ failed". Fed by conclave/taskUpdated and conclave/recoveryStatus;
// `render(now)` is called by the glue every second while a retry countdown runs.
// Imports nothing from 'vscode'.

import type { RecoveryEvent, TaskSummary, TokenUsage } from '../lsp_ext';
import { Emitter } from './event';
import { isEarlier } from './time';
import { addUsage, usageDetail, usageLabel } from './usage';

export type StatusKind = 'idle' | 'running' | 'retry' | 'escalated' | 'failed';

export interface StatusView {
  kind: StatusKind;
  /** Plain text (no codicons), e.g. "Conclave: 1 running · 12.3k tokens · ↻ retry 1/2 in 4 s". */
  text: string;
  tooltip: string;
  /** The task a click should reveal, if any. */
  taskId?: string;
  /** True while a countdown is shown: render again in a second. */
  ticking: boolean;
}

const FINISHED = new Set(['completed', 'failed', 'cancelled']);

export class StatusModel {
  private readonly tasks = new Map<string, TaskSummary>();
  /** Latest recovery event per task, with the local time it arrived (for countdowns). */
  private readonly recoveries = new Map<string, { event: RecoveryEvent; receivedAt: number }>();
  private circuitOpen: RecoveryEvent | undefined;
  /**
   * The latest provider-wide step other than the circuit's (taskId ""), e.g. "waiting for
   * openai, next try in 20 s": shown as it arrives, with its countdown, until its delay ran
   * out or the circuit closed.
   */
  private providerNotice: { event: RecoveryEvent; receivedAt: number } | undefined;
  private readonly changed = new Emitter<void>();
  /** Fires after any change; the status bar renders again on it. */
  readonly onDidChange = this.changed.event;

  updateTask(task: TaskSummary, now: number = Date.now()): void {
    if (this.adopt(task, now)) this.changed.fire();
  }

  setTasks(tasks: TaskSummary[], now: number = Date.now()): void {
    this.tasks.clear();
    for (const task of tasks) this.adopt(task, now);
    this.changed.fire();
  }

  private adopt(task: TaskSummary, now: number): boolean {
    const known = this.tasks.get(task.taskId);
    if (known && isEarlier(task.updatedAt, known.updatedAt)) return false;
    this.tasks.set(task.taskId, task);
    // A task summary carries the latest recovery step: adopt it when we missed the event.
    const held = this.recoveries.get(task.taskId);
    if (task.recovery && (!held || isEarlier(held.event.at, task.recovery.at))) {
      this.recoveries.set(task.taskId, { event: task.recovery, receivedAt: now });
    }
    return true;
  }

  recovery(event: RecoveryEvent, now: number = Date.now()): void {
    if (event.action === 'circuit_open') {
      this.circuitOpen = event;
    } else if (event.action === 'circuit_closed') {
      this.circuitOpen = undefined;
      this.providerNotice = undefined;
    } else if (!event.taskId) {
      this.providerNotice = { event, receivedAt: now };
    } else {
      if (!event.taskId) return;
      const held = this.recoveries.get(event.taskId);
      if (held && isEarlier(event.at, held.event.at)) return;
      this.recoveries.set(event.taskId, { event, receivedAt: now });
    }
    this.changed.fire();
  }

  render(now: number = Date.now()): StatusView {
    const all = [...this.tasks.values()];
    const active = all.filter((t) => !FINISHED.has(t.status));
    const escalated = active.filter((t) => t.status === 'escalated');
    const others = active.filter((t) => t.status !== 'escalated');
    const parts: string[] = [];
    const tooltip: string[] = [];
    let kind: StatusKind = 'idle';
    let taskId: string | undefined;
    let ticking = false;

    if (others.length > 0) {
      parts.push(`${others.length} running`);
      kind = 'running';
      taskId = newest(others).taskId;
      for (const task of others) {
        const used = task.usageTotal ? ` — ${usageLabel(task.usageTotal)}` : '';
        tooltip.push(`${task.title}: ${task.status.replace(/_/g, ' ')} (${Math.floor(task.progress)}%)${used}`);
      }
    }
    // What the unfinished tasks have spent so far, right after how many there are.
    const spent = addUsage(active.map((t) => t.usageTotal).filter((u): u is TokenUsage => !!u));
    if (spent) tooltip.push(`Tokens of the unfinished tasks: ${usageDetail(spent)}`);
    if (spent && others.length > 0) parts.push(usageLabel(spent));

    const retrying = others
      .filter((t) => t.status === 'recovering')
      .map((t) => ({ task: t, held: this.recoveries.get(t.taskId) }))
      .filter((r) => r.held && r.held.event.action === 'retry');
    if (retrying.length > 0) {
      const { task, held } = retrying.sort((a, b) => (isEarlier(a.held!.event.at, b.held!.event.at) ? 1 : -1))[0];
      const event = held!.event;
      let text = `↻ retry ${event.attempt}/${event.maxAttempts}`;
      const remaining = (event.delayMs ?? 0) - (now - held!.receivedAt);
      if (remaining > 0) {
        text += ` in ${Math.ceil(remaining / 1000)} s`;
        ticking = true;
      }
      parts.push(text);
      kind = 'retry';
      taskId = task.taskId;
      tooltip.push(`Retrying: ${event.message}`);
    }

    if (escalated.length > 0) {
      parts.push(escalated.length === 1 ? '⚠ escalated' : `⚠ ${escalated.length} escalated`);
      kind = 'escalated';
      taskId = newest(escalated).taskId;
      for (const task of escalated) {
        const why = this.recoveries.get(task.taskId)?.event.message;
        tooltip.push(`${task.title}: escalated${why ? ` — ${why}` : ''}`);
      }
      if (spent && others.length === 0) parts.push(usageLabel(spent));
    }

    if (active.length === 0) {
      const finished = all.filter((t) => FINISHED.has(t.status));
      const last = finished.length > 0 ? newest(finished) : undefined;
      if (last && last.status === 'failed') {
        parts.push('✖ failed');
        kind = 'failed';
        taskId = last.taskId;
        tooltip.push(`${last.title}: failed. Retry it or open the error report.`);
      } else {
        parts.push('idle');
        if (last) tooltip.push(`Last task: ${last.title} (${last.status})`);
        else tooltip.push('No task yet');
      }
    }

    const notice = this.providerNotice;
    const noticeLeft = notice ? (notice.event.delayMs ?? 0) - (now - notice.receivedAt) : 0;
    if (notice && (notice.event.delayMs ? noticeLeft > 0 : true)) {
      parts.push(`⏸ ${countdown(notice.event.message, noticeLeft)}`);
      tooltip.push(notice.event.message);
      if (noticeLeft > 0) ticking = true;
    } else if (this.circuitOpen) {
      parts.push('⏸ provider paused');
      tooltip.push(`Circuit open: ${this.circuitOpen.message}`);
    }

    return { kind, text: `Conclave: ${parts.join(' · ')}`, tooltip: tooltip.join('\n'), taskId, ticking };
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/**
 * A provider message as the status bar shows it: its "in N s" counts down with `leftMs`,
 * and it is cut at 60 characters (the tooltip has it whole).
 */
export function countdown(message: string, leftMs: number): string {
  let text = message.trim();
  if (leftMs > 0) text = text.replace(/\bin \d+(?:\.\d+)? ?s\b/, `in ${Math.ceil(leftMs / 1000)} s`);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function newest(tasks: TaskSummary[]): TaskSummary {
  return tasks.reduce((a, b) => (isEarlier(a.updatedAt, b.updatedAt) ? b : a));
}
