// Tree views over the pure models: Tasks (approvals on top, tasks → final report, subtasks
// and checks) and Agents.

import * as vscode from 'vscode';
import type { AgentsModel, AgentTreeNode } from './model/agents';
import type { TaskDetails } from './model/details';
import { isFinished, type TaskTreeNode, type TasksModel, type TreeRow } from './model/tasks';

function toItem(row: TreeRow): vscode.TreeItem {
  const item = new vscode.TreeItem(
    row.label,
    !row.collapsible
      ? vscode.TreeItemCollapsibleState.None
      : row.collapsed
        ? vscode.TreeItemCollapsibleState.Collapsed
        : vscode.TreeItemCollapsibleState.Expanded,
  );
  item.id = row.id;
  item.description = row.description;
  item.tooltip = row.tooltip;
  item.iconPath = new vscode.ThemeIcon(row.icon, row.color ? new vscode.ThemeColor(row.color) : undefined);
  item.contextValue = row.contextValue;
  return item;
}

export class TasksTreeProvider implements vscode.TreeDataProvider<TaskTreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TaskTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly model: TasksModel,
    private readonly details: TaskDetails,
  ) {
    this.subscription = model.onDidChange(() => this.changed.fire(undefined));
  }

  getTreeItem(node: TaskTreeNode): vscode.TreeItem {
    const item = toItem(this.model.row(node));
    if (node.kind === 'approval') {
      item.command = { command: 'conclave.answerApproval', title: 'Answer', arguments: [node] };
    } else if (node.kind === 'report') {
      item.command = { command: 'conclave.showFinalReport', title: 'Show the final report', arguments: [node] };
    } else if (node.kind === 'check' && node.check.detail.trim()) {
      item.command = { command: 'conclave.openCheck', title: "Show the check's output", arguments: [node] };
    }
    return item;
  }

  async getChildren(node?: TaskTreeNode): Promise<TaskTreeNode[]> {
    // The checks themselves, and a finished task's final report, are in the task's detail:
    // fetched when the node opens (and again when the report arrives after the end).
    const status = node && node.kind !== 'approval' ? this.model.task(node.task.taskId)?.status : undefined;
    if (node?.kind === 'checks' || (node?.kind === 'task' && isFinished(status ?? node.task.status))) {
      await this.details.ensure(node.task.taskId);
    }
    return node ? this.model.children(node) : this.model.roots();
  }

  getParent(node: TaskTreeNode): TaskTreeNode | undefined {
    return this.model.parent(node);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

export class AgentsTreeProvider implements vscode.TreeDataProvider<AgentTreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<AgentTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(private readonly model: AgentsModel) {
    this.subscription = model.onDidChange(() => this.changed.fire(undefined));
  }

  getTreeItem(node: AgentTreeNode): vscode.TreeItem {
    return toItem(this.model.row(node));
  }

  getChildren(node?: AgentTreeNode): AgentTreeNode[] {
    return node ? this.model.children(node) : this.model.roots();
  }

  getParent(node: AgentTreeNode): AgentTreeNode | undefined {
    return node.kind === 'agent' ? { kind: 'layer', layer: node.agent.layer } : undefined;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
