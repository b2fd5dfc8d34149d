// All the models of one window, and the wiring that feeds them from the server: the very
// code the extension runs, which the tests attach to a vscode-jsonrpc connection to the
// real binary. Imports nothing from 'vscode'.

import * as lsp from '../lsp_ext';
import { AgentsModel } from './agents';
import { ApprovalsModel } from './approvals';
import { type Disposable, Emitter } from './event';
import type { NotificationSource, Requester } from './rpc';
import { StatusModel } from './status';
import { TasksModel } from './tasks';
import { WhiteboardStore } from './whiteboards';

export class ConclaveModels {
  readonly agents = new AgentsModel();
  readonly tasks = new TasksModel((id) => this.agents.name(id));
  readonly status = new StatusModel();
  readonly whiteboards = new WhiteboardStore();
  readonly approvals: ApprovalsModel;
  private readonly recoveries = new Emitter<lsp.RecoveryEvent>();
  private readonly resolved = new Emitter<lsp.ApprovalResolvedParams>();
  /** Every conclave/approvalResolved, after the approval left the Tasks tree. */
  readonly onApprovalResolved = this.resolved.event;
  /** Every conclave/recoveryStatus, after the status model took it. */
  readonly onRecovery = this.recoveries.event;

  /** `requester` is the running connection, if any. */
  constructor(private readonly requester: () => Requester | undefined) {
    this.approvals = new ApprovalsModel(this.tasks, requester);
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
    await this.refreshAgents();
  }

  dispose(): void {
    this.tasks.dispose();
    this.agents.dispose();
    this.status.dispose();
    this.whiteboards.dispose();
    this.approvals.dispose();
    this.recoveries.dispose();
    this.resolved.dispose();
  }
}
