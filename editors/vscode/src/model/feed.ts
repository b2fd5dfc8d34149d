// All the models of one window, and the wiring that feeds them from the server: the very
// code the extension runs, which the tests attach to a vscode-jsonrpc connection to the
// real binary. Imports nothing from 'vscode'.

import * as lsp from '../lsp_ext';
import { AgentsModel } from './agents';
import { ApprovalsModel } from './approvals';
import { TaskDetails } from './details';
import { type Disposable, Emitter } from './event';
import type { NotificationSource, Requester } from './rpc';
import { StatusModel } from './status';
import { isFinished, TasksModel } from './tasks';
import { compareTimestamps } from './time';
import { WhiteboardStore } from './whiteboards';

export class ConclaveModels {
  readonly agents = new AgentsModel();
  /** Task details (checks, usage by agent) for the tasks someone looks at. */
  readonly details: TaskDetails;
  readonly tasks = new TasksModel(
    (id) => this.agents.name(id),
    (id) => this.details.get(id),
  );
  readonly status = new StatusModel();
  readonly whiteboards = new WhiteboardStore();
  readonly approvals: ApprovalsModel;
  private readonly recoveries = new Emitter<lsp.RecoveryEvent>();
  private readonly resolved = new Emitter<lsp.ApprovalResolvedParams>();
  private readonly detailsSubscription: Disposable;
  /** The task selected in the Tasks tree, if any: the one the Agents view counts for. */
  private selectedTaskId: string | undefined;
  /** Every conclave/approvalResolved, after the approval left the Tasks tree. */
  readonly onApprovalResolved = this.resolved.event;
  /** Every conclave/recoveryStatus, after the status model took it. */
  readonly onRecovery = this.recoveries.event;

  /** `requester` is the running connection, if any. */
  constructor(private readonly requester: () => Requester | undefined) {
    this.details = new TaskDetails(requester);
    this.approvals = new ApprovalsModel(this.tasks, requester);
    this.detailsSubscription = this.details.onDidChange((taskId) => {
      this.tasks.detailChanged(taskId);
      if (taskId === this.usageTaskId()) this.showAgentUsage();
    });
  }

  /** The task selected in the Tasks tree (undefined: none); the agents show its usage. */
  selectTask(taskId: string | undefined): void {
    this.selectedTaskId = taskId;
    this.showAgentUsage();
  }

  /** The task whose usage the agents show: the selected one, else the newest unfinished, else the newest. */
  usageTaskId(): string | undefined {
    if (this.selectedTaskId && this.tasks.task(this.selectedTaskId)) return this.selectedTaskId;
    const all = this.tasks.allTasks();
    const newest = (tasks: lsp.TaskSummary[]) =>
      tasks.reduce<lsp.TaskSummary | undefined>(
        (a, b) => (!a || compareTimestamps(b.createdAt, a.createdAt) > 0 ? b : a),
        undefined,
      );
    return (newest(all.filter((t) => !isFinished(t.status))) ?? newest(all))?.taskId;
  }

  /** Puts the usage by agent of the task the agents follow on their nodes (fetched when not held). */
  private showAgentUsage(): void {
    const taskId = this.usageTaskId();
    const detail = taskId ? this.details.get(taskId) : undefined;
    this.agents.setUsage(
      detail?.usage ? { taskId: detail.taskId, taskTitle: detail.title, byAgent: detail.usage.byAgent } : undefined,
    );
    if (taskId && !detail) this.details.ensure(taskId).catch(() => undefined);
  }

  /**
   * Follows the server's notifications (one handler per method: a connection keeps only
   * the last one registered, so nothing else may register these). `onError` hears about requests the models make on
   * their own (listAgents when an unknown agent appears).
   */
  attach(source: NotificationSource, onError: (what: string, error: unknown) => void = () => undefined): Disposable[] {
    return [
      source.onNotification(lsp.taskUpdated, ({ task }) => {
        this.tasks.updateTask(task);
        this.status.updateTask(task);
        this.details.summaryChanged(task);
        this.showAgentUsage();
      }),
      source.onNotification(lsp.recoveryStatus, (event) => {
        this.status.recovery(event);
        this.recoveries.fire(event);
      }),
      source.onNotification(lsp.agentStatus, (params) => {
        // A new agent (a replacement, a grown team): fetch the list again.
        if (!this.agents.applyStatus(params)) this.refreshAgents().catch((error) => onError('listAgents', error));
      }),
      source.onNotification(lsp.whiteboardChanged, (board) => this.whiteboards.apply(board)),
      // Answered here, in another editor or withdrawn: no longer pending anywhere.
      source.onNotification(lsp.approvalResolved, (params) => {
        this.tasks.removeApproval(params.approvalId);
        this.resolved.fire(params);
      }),
    ];
  }

  async refreshAgents(): Promise<void> {
    const requester = this.requester();
    if (requester) this.agents.setAgents((await requester.sendRequest(lsp.listAgents, {})).agents);
  }

  /** Loads everything the server knows: tasks, pending approvals, agents. */
  async refresh(): Promise<void> {
    const requester = this.requester();
    if (!requester) return;
    const [{ tasks }] = await Promise.all([requester.sendRequest(lsp.listTasks, {}), this.approvals.refresh()]);
    this.tasks.setTasks(tasks);
    this.status.setTasks(tasks);
    for (const task of tasks) this.details.summaryChanged(task);
    await this.refreshAgents();
    this.showAgentUsage();
  }

  dispose(): void {
    this.detailsSubscription.dispose();
    this.details.dispose();
    this.tasks.dispose();
    this.agents.dispose();
    this.status.dispose();
    this.whiteboards.dispose();
    this.approvals.dispose();
    this.recoveries.dispose();
    this.resolved.dispose();
  }
}
