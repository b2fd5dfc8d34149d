// Tree views over the pure models: Tasks (approvals on top, tasks → subtasks) and Agents.

import * as vscode from 'vscode';
import type { AgentsModel, AgentTreeNode } from './model/agents';
import type { TaskTreeNode, TasksModel, TreeRow } from './model/tasks';

function toItem(row: TreeRow): vscode.TreeItem {
  const item = new vscode.TreeItem(
    row.label,
    row.collapsible ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
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

  constructor(private readonly model: TasksModel) {
    this.subscription = model.onDidChange(() => this.changed.fire(undefined));
  }

  getTreeItem(node: TaskTreeNode): vscode.TreeItem {
    const item = toItem(this.model.row(node));
    if (node.kind === 'approval') {
      item.command = { command: 'conclave.answerApproval', title: 'Answer', arguments: [node] };
    }
    return item;
  }

  getChildren(node?: TaskTreeNode): TaskTreeNode[] {
    return node ? this.model.children(node) : this.model.roots();
  }

  getParent(node: TaskTreeNode): TaskTreeNode | undefined {
    return node.kind === 'subtask' ? { kind: 'task', task: node.task } : undefined;
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
