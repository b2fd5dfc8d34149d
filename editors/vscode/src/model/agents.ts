// The Agents tree as a pure model: agents grouped by layer (top, mid, bottom), their
// status kept current by conclave/agentStatus, metrics in the tooltip. Fed by
// conclave/listAgents and conclave/agentStatus. Imports nothing from 'vscode'.

import type { AgentInfo, AgentLayer, AgentStatusParams, TokenUsage } from '../lsp_ext';
import { Emitter } from './event';
import type { TreeRow } from './tasks';
import { addUsage, usageDetail, usageLabel } from './usage';

/** Each agent's tokens and cost on one task (TaskDetail.usage.byAgent), shown on its node. */
export interface AgentUsage {
  taskId: string;
  taskTitle: string;
  byAgent: Record<string, TokenUsage>;
}

export const LAYERS: readonly AgentLayer[] = ['top', 'mid', 'bottom'];

export type AgentTreeNode = { kind: 'layer'; layer: AgentLayer } | { kind: 'agent'; agent: AgentInfo };

export function agentStatusIcon(status: string): { icon: string; color?: string } {
  switch (status) {
    case 'initializing':
      return { icon: 'loading~spin' };
    case 'idle':
      return { icon: 'circle-outline' };
    case 'working':
      return { icon: 'sync~spin' };
    case 'waiting_approval':
      return { icon: 'question', color: 'notificationsWarningIcon.foreground' };
    case 'blocked':
      return { icon: 'debug-pause', color: 'notificationsWarningIcon.foreground' };
    case 'failed':
      return { icon: 'error', color: 'testing.iconFailed' };
    case 'shutting_down':
      return { icon: 'debug-stop' };
    case 'terminated':
      return { icon: 'circle-slash' };
    default:
      return { icon: 'circle-outline' };
  }
}

/** An agent state in words: waiting for an approval, blocked and failed read differently. */
export function agentStatusLabel(status: string): string {
  switch (status) {
    case 'waiting_approval':
      return 'waiting for approval';
    case 'blocked':
      return 'blocked';
    case 'shutting_down':
      return 'shutting down';
    default:
      return status.replace(/_/g, ' ');
  }
}

export class AgentsModel {
  private readonly agents = new Map<string, AgentInfo>();
  /** Last transition reason per agent, from conclave/agentStatus. */
  private readonly reasons = new Map<string, string>();
  private usage: AgentUsage | undefined;
  private readonly changed = new Emitter<void>();
  readonly onDidChange = this.changed.event;

  /** conclave/listAgents. */
  setAgents(agents: AgentInfo[]): void {
    this.agents.clear();
    for (const agent of agents) this.agents.set(agent.agentId, agent);
    this.changed.fire();
  }

  /**
   * conclave/agentStatus. Returns false when the agent is unknown (a new agent: the caller
   * should refresh with conclave/listAgents).
   */
  applyStatus(params: AgentStatusParams): boolean {
    const agent = this.agents.get(params.agentId);
    this.reasons.set(params.agentId, params.reason);
    if (!agent) return false;
    this.agents.set(params.agentId, { ...agent, status: params.to });
    this.changed.fire();
    return true;
  }

  /** The task whose usage the agents show (the selected or running one), or none. */
  setUsage(usage: AgentUsage | undefined): void {
    if (JSON.stringify(usage) === JSON.stringify(this.usage)) return;
    this.usage = usage;
    this.changed.fire();
  }

  /** What the agents' figures are about: "tokens on “Add a flag”", or undefined. */
  usageScope(): string | undefined {
    return this.usage ? `tokens on “${this.usage.taskTitle}”` : undefined;
  }

  /** An agent's tokens and cost on the task the view follows. */
  usageOf(agentId: string): TokenUsage | undefined {
    return this.usage?.byAgent[agentId];
  }

  get(agentId: string): AgentInfo | undefined {
    return this.agents.get(agentId);
  }

  name(agentId: string): string | undefined {
    return this.agents.get(agentId)?.name;
  }

  all(): AgentInfo[] {
    return [...this.agents.values()];
  }

  byLayer(layer: AgentLayer): AgentInfo[] {
    return this.all()
      .filter((agent) => agent.layer === layer)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  roots(): AgentTreeNode[] {
    return LAYERS.filter((layer) => this.byLayer(layer).length > 0).map((layer) => ({ kind: 'layer', layer }));
  }

  children(node: AgentTreeNode): AgentTreeNode[] {
    if (node.kind !== 'layer') return [];
    return this.byLayer(node.layer).map((agent) => ({ kind: 'agent', agent }));
  }

  row(node: AgentTreeNode): TreeRow {
    if (node.kind === 'layer') {
      const agents = this.byLayer(node.layer);
      const counts = [`${agents.length} agent${agents.length === 1 ? '' : 's'}`];
      for (const status of ['working', 'waiting_approval', 'blocked', 'failed']) {
        const n = agents.filter((a) => a.status === status).length;
        if (n > 0) counts.push(`${n} ${agentStatusLabel(status)}`);
      }
      const used = addUsage(agents.map((a) => this.usageOf(a.agentId)).filter((u): u is TokenUsage => !!u));
      if (used) counts.push(usageLabel(used));
      return {
        id: `layer:${node.layer}`,
        label: `${node.layer[0].toUpperCase()}${node.layer.slice(1)} layer`,
        description: counts.join(' · '),
        tooltip: `${agents.length} ${node.layer}-layer agents`,
        icon: node.layer === 'top' ? 'star-full' : node.layer === 'mid' ? 'organization' : 'person',
        contextValue: 'layer',
        collapsible: true,
      };
    }
    const agent = this.agents.get(node.agent.agentId) ?? node.agent;
    const { icon, color } = agentStatusIcon(agent.status);
    const used = this.usageOf(agent.agentId);
    return {
      id: `agent:${agent.agentId}`,
      label: agent.name,
      // The figure before the role: roles are long sentences a narrow view cuts off.
      description: [agentStatusLabel(agent.status), used ? usageLabel(used) : undefined, agent.role]
        .filter(Boolean)
        .join(' · '),
      tooltip: this.tooltip(agent.agentId),
      icon,
      color,
      contextValue: 'agent',
      collapsible: false,
    };
  }

  /** The metrics tooltip of an agent. */
  tooltip(agentId: string): string {
    const agent = this.agents.get(agentId);
    if (!agent) return '';
    const m = agent.metrics;
    const lines = [`${agent.name} (${agent.layer}, ${agent.role})`, `Status: ${agentStatusLabel(agent.status)}`];
    const reason = this.reasons.get(agentId);
    if (reason) lines.push(`Last change: ${reason}`);
    if (agent.currentTaskId) lines.push(`Current task: ${agent.currentTaskId}`);
    const used = this.usageOf(agentId);
    if (used && this.usage) lines.push(`Tokens on “${this.usage.taskTitle}”: ${usageDetail(used)}`);
    if (agent.supervisor) lines.push(`Supervisor: ${this.name(agent.supervisor) ?? agent.supervisor}`);
    if (agent.subordinates.length > 0)
      lines.push(`Subordinates: ${agent.subordinates.map((id) => this.name(id) ?? id).join(', ')}`);
    lines.push(
      `Tasks completed: ${m.tasksCompleted}`,
      `Tasks failed: ${m.tasksFailed}`,
      `Average task duration: ${Math.round(m.averageTaskDurationMs)} ms`,
      `Messages processed: ${m.messagesProcessed}`,
      `Heartbeats: ${m.heartbeatsResponded} answered, ${m.heartbeatsMissed} missed`,
      `Warnings received: ${m.warningsReceived}`,
      `Performance score: ${m.performanceScore.toFixed(2)}`,
    );
    if (m.lastActiveAt) lines.push(`Last active: ${m.lastActiveAt}`);
    lines.push(`Agent id: ${agent.agentId}`);
    return lines.join('\n');
  }

  dispose(): void {
    this.changed.dispose();
  }
}
