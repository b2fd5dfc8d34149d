// Task details (conclave/getTask) for what a task summary only counts or lacks: the checks
// with their output, the usage split by agent, the top agent's final report. Fetched for the
// tasks someone looks at (a task or its Checks node opened, the task the Agents view
// follows), then kept fresh: when such a task's summary says its usage or checks moved, or a
// finished task changed, it is fetched again, one request per task at a time (changes that
// arrive meanwhile are folded into one more fetch).
// Imports nothing from 'vscode'.

import * as lsp from '../lsp_ext';
import type { TaskDetail, TaskSummary } from '../lsp_ext';
import { Emitter } from './event';
import type { Requester } from './rpc';
import { isFinished } from './tasks';

/**
 * What in a summary says the detail may have moved. Once the task finished, any change
 * counts: the top's final report, which the summary does not carry, follows the end with a
 * `conclave/taskUpdated` of its own (as does taking the task back).
 */
function version(task: TaskSummary): string {
  const usage = task.usageTotal;
  return [
    task.status,
    usage?.calls ?? 0,
    usage?.inputTokens ?? 0,
    usage?.outputTokens ?? 0,
    task.checkCounts?.at ?? '',
    isFinished(task.status) ? task.updatedAt : '',
  ].join('|');
}

export class TaskDetails {
  private readonly details = new Map<string, TaskDetail>();
  private readonly inFlight = new Map<string, Promise<TaskDetail | undefined>>();
  /**
   * Tasks that changed while their fetch was in flight, with their latest version: fetched
   * once more after it unless the answer already was that version.
   */
  private readonly again = new Map<string, string>();
  private readonly changed = new Emitter<string>();
  /** Fires with a task id when its detail arrived or changed. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly requester: () => Requester | undefined) {}

  get(taskId: string): TaskDetail | undefined {
    return this.details.get(taskId);
  }

  /** The detail, fetched when not held yet; from then on it is kept fresh. */
  async ensure(taskId: string): Promise<TaskDetail | undefined> {
    return this.details.get(taskId) ?? this.inFlight.get(taskId) ?? this.fetch(taskId);
  }

  /** conclave/taskUpdated (and listTasks): fetch again what is held and moved. */
  summaryChanged(task: TaskSummary): void {
    const held = this.details.get(task.taskId);
    if (this.inFlight.has(task.taskId)) {
      this.again.set(task.taskId, version(task));
    } else if (held && version(held) !== version(task)) {
      void this.fetch(task.taskId);
    }
  }

  private fetch(taskId: string): Promise<TaskDetail | undefined> {
    const requester = this.requester();
    if (!requester) return Promise.resolve(undefined);
    let sent: Promise<TaskDetail>;
    try {
      sent = requester.sendRequest(lsp.getTask, { taskId });
    } catch (error) {
      // A connection already disposed throws rather than rejects; a fetch made from
      // another's `finally` must not turn that into an unhandled rejection.
      sent = Promise.reject(error);
    }
    const request = sent
      .then(
        (detail) => {
          this.details.set(taskId, detail);
          this.changed.fire(taskId);
          return detail;
        },
        // An unknown task (another server's, one pruned from history): nothing to show.
        () => undefined,
      )
      .finally(() => {
        this.inFlight.delete(taskId);
        const latest = this.again.get(taskId);
        this.again.delete(taskId);
        const held = this.details.get(taskId);
        if (latest !== undefined && held && version(held) !== latest) void this.fetch(taskId);
      });
    this.inFlight.set(taskId, request);
    return request;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
