// The Conclave wire protocol (version 1) as TypeScript types and typed method names.
// Source of truth: docs/protocol.md. This module imports only
// vscode-jsonrpc so the tests can drive the real server with the very same types.

import { NotificationType, RequestType } from 'vscode-jsonrpc';

export const PROTOCOL_VERSION = 1;

export type TaskStatus =
  | 'queued'
  | 'planning'
  | 'awaiting_approval'
  | 'running'
  | 'recovering'
  | 'escalated'
  | 'completed'
  | 'failed'
  | 'cancelled';

export type SubtaskStatus = 'pending' | 'running' | 'recovering' | 'escalated' | 'completed' | 'failed' | 'cancelled';

export const FINISHED_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

export type Severity = 'low' | 'medium' | 'high' | 'critical';

export type RecoveryAction =
  | 'retry'
  | 'peer_takeover'
  | 'escalate_to_supervisor'
  | 'escalate_to_top'
  | 'replace_agent'
  | 'circuit_open'
  | 'circuit_closed'
  | 'recovered'
  | 'gave_up';

export interface RecoveryEvent {
  taskId: string;
  subtaskId?: string | null;
  agentId: string;
  action: RecoveryAction;
  severity: Severity;
  attempt: number;
  maxAttempts: number;
  delayMs?: number | null;
  message: string;
  /** What the step is about: a provider-wide step has no task (`taskId` is ""). */
  scope?: 'task' | 'subtask' | 'provider' | 'tool';
  /** The provider the step is about (waits, breakers, outages). */
  provider?: string | null;
  files?: string[] | null;
  /** A provider-wide step: the unfinished tasks it holds up. */
  taskIds?: string[];
  at: string;
}

export interface SubtaskSummary {
  subtaskId: string;
  description: string;
  assignee: string | null;
  /** The assignee's name, kept when that agent is gone (addition to the contract). */
  assigneeName?: string;
  status: SubtaskStatus;
  attempts: number;
  /** file:// URIs written so far (addition to the contract). */
  files?: string[];
}

export interface TaskSummary {
  taskId: string;
  title: string;
  status: TaskStatus;
  progress: number;
  createdAt: string;
  updatedAt: string;
  subtasks: SubtaskSummary[];
  recovery: RecoveryEvent | null;
  /** Why the task's work was never run by its checks (addition to the contract). */
  unchecked?: string;
  /** (addition) A completed task's: what ran its code when its checks last passed. */
  checkedBy?: CheckedBy;
  /** Why an unfinished task waits: for the ACP session it belongs to (addition). */
  parked?: string;
  /** (addition) The task's tokens and cost so far; absent until its first model call. */
  usageTotal?: TokenUsage;
  /** (addition) The task's checks counted; absent until a check ran. */
  checkCounts?: CheckCounts;
  /** (addition) Its changes were taken back: it failed, or a person undid it. */
  revertedBy?: 'failure' | 'undo';
}

/** (addition) What a completion rests on, strongest first. */
export type CheckedBy = 'projectTests' | 'taskExamples' | 'ownTestOnly' | 'disputed' | 'nothing';

/** (addition) What taking a task back did; paths are workspace-relative. */
export interface Reverted {
  by: 'failure' | 'undo';
  at: string;
  restored: string[];
  kept: { path: string; reason: string }[];
}

/** What undoing a task does to one file. */
export type UndoAction = 'restore' | 'remove' | 'recreate' | 'unchanged' | 'not_kept';

/** (addition) The answer of conclave/undoTask. */
export interface UndoResult {
  taskId: string;
  applied: boolean;
  /** Every file's unified diff, now → before the task. */
  diff: string;
  /** Files changed since the task that the undo would change. */
  conflicts: string[];
  files: { path: string; uri: string; action: UndoAction; editedSince: boolean; diff: string }[];
  /** Set when applied. */
  reverted: Reverted | null;
}

export interface UndoTaskParams {
  taskId: string;
  apply?: boolean;
  editedFiles?: 'overwrite' | 'keep';
}

/** Tokens used by some model calls, and their cost when the model has a price. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  calls: number;
  /** Calls whose provider reported no usage, counted by an estimate. */
  estimatedCalls?: number;
  /** US dollars; null when the model has no entry in [pricing]. */
  costUsd: number | null;
}

/** TaskDetail.usage: the total, and the same split by subtask and by agent (ids as keys). */
export interface TaskUsage {
  total: TokenUsage;
  bySubtask: Record<string, TokenUsage>;
  byAgent: Record<string, TokenUsage>;
  tokenLimit?: number;
  /** The spend cap in US dollars, once the person raised it (addition). */
  costLimitUsd?: number;
}

export interface CheckCounts {
  passed: number;
  failed: number;
  skipped: number;
  /** The rule ids behind the failed checks, each once. */
  failedRules?: string[];
  /** When the latest check ran. */
  at: string;
}

export type CheckStatus = 'passed' | 'failed' | 'skipped';

/** One check of the code a task wrote (TaskDetail.checks). */
export interface CheckResult {
  kind: string;
  /** What ran: a command line, or a built-in scan's name. */
  name: string;
  status: CheckStatus;
  files: string[];
  /** Why it was skipped, the end of a failure's output, what a passed test ignored. */
  detail: string;
  subtaskId: string | null;
  at: string;
  rules?: string[];
}

/** One failure a task met, as recovery classified it (docs/protocol.md, `TaskError`). */
export interface TaskError {
  kind: string;
  /** A finer stable name from the source, e.g. `http_status`. */
  code?: string;
  severity: Severity;
  transient: boolean;
  fatal: boolean;
  retryAfterMs?: number;
  message: string;
  rootCause?: { kind: string; message: string };
  /** What the failure is about, with its ids. */
  scope: 'unattributed' | 'task' | 'subtask' | 'provider' | 'tool';
  taskId?: string;
  subtaskId?: string;
  provider?: string;
  tool?: string;
  at: string;
}

export interface TaskDetail extends TaskSummary {
  description: string;
  filesWritten: string[];
  result: string | null;
  partialResults: string[];
  errors: TaskError[];
  /** (addition) What was checked after the code was written, and how. */
  checks?: CheckResult[];
  /** (addition) How many times each check rule found something, by rule id. */
  ruleFindings?: Record<string, number>;
  /** (addition) Tokens and cost, in all and by subtask and agent. */
  usage?: TaskUsage;
  /** (addition) What taking the task back did. */
  reverted?: Reverted;
  /** (addition) The top agent's report on the finished task, once written. */
  finalReport?: FinalReport;
}

/** (addition) A top agent's report on a finished task: Markdown, the outcome first. */
export interface FinalReport {
  by: string;
  at: string;
  text: string;
}

export type AgentLayer = 'top' | 'mid' | 'bottom';
export type AgentStatus =
  'initializing' | 'idle' | 'working' | 'waiting_approval' | 'blocked' | 'failed' | 'shutting_down' | 'terminated';

export interface AgentMetrics {
  tasksCompleted: number;
  tasksFailed: number;
  averageTaskDurationMs: number;
  messagesProcessed: number;
  heartbeatsResponded: number;
  heartbeatsMissed: number;
  warningsReceived: number;
  lastActiveAt: string | null;
  performanceScore: number;
}

export interface AgentInfo {
  agentId: string;
  name: string;
  layer: AgentLayer;
  role: string;
  status: AgentStatus;
  supervisor: string | null;
  subordinates: string[];
  currentTaskId: string | null;
  metrics: AgentMetrics;
}

export type ApprovalKind = 'escalation' | 'decision' | 'fileChange' | 'command';
export type ApprovalDecision = 'retry' | 'reassign' | 'modify' | 'abort' | 'approve' | 'reject';

export interface ApprovalOption {
  id: ApprovalDecision;
  title: string;
}

export interface ApprovalDiff {
  uri: string;
  before: string;
  after: string;
}

export interface ApprovalRequest {
  approvalId: string;
  kind: ApprovalKind;
  taskId: string;
  subtaskId?: string | null;
  agentId: string;
  severity: Severity;
  title: string;
  detail: string;
  proposedSolution?: string | null;
  diff?: ApprovalDiff | null;
  command?: string | null;
  /** (addition) The subtask's current description: what "Modify the subtask" starts from. */
  subtaskDescription?: string | null;
  options: ApprovalOption[];
  createdAt: string;
}

/** (addition) conclave/approvalResolved: answered (decision) or withdrawn (null, reason). */
export interface ApprovalResolvedParams {
  approvalId: string;
  taskId: string;
  decision: ApprovalDecision | null;
  reason?: string | null;
}

export interface ApprovalAnswer {
  decision: ApprovalDecision;
  note?: string;
  modifiedDescription?: string;
}

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

export interface SubmitTaskParams {
  description: string;
  title?: string;
  context?: { files?: string[]; selection?: { uri: string; range: Range } };
  options?: { continueOnError?: boolean; timeoutMs?: number; maxRetries?: number };
  workDoneToken?: string | number;
}

export interface TaskIdParams {
  taskId: string;
}
export interface WhiteboardIdParams {
  id: string;
}
export interface Whiteboard {
  id: string;
  version: number;
  content: string;
}
export interface WhiteboardInfo {
  id: string;
  version: number;
  updatedAt: string;
}

export interface ResolveApprovalParams extends ApprovalAnswer {
  approvalId: string;
}

export interface TaskLogEntry {
  at: string;
  kind: string;
  actor: string;
  text: string;
  detail?: unknown;
}

export interface AgentStatusParams {
  agentId: string;
  from: AgentStatus;
  to: AgentStatus;
  reason: string;
  at: string;
}

/** What the client announces in capabilities.experimental.conclave. */
export interface ClientConclaveCapabilities {
  approvals: boolean;
  whiteboards: boolean;
  recoveryStatus: boolean;
}

/** What the server answers in capabilities.experimental.conclave. */
export interface ServerConclaveCapabilities {
  protocolVersion: number;
}

export const ErrorCodes = {
  TaskNotFound: 1001,
  ApprovalNotFound: 1002,
  WhiteboardNotFound: 1003,
  LlmNotConfigured: 1004,
  PathOutsideWorkspace: 1005,
  AgentPoolFull: 1006,
  InvalidState: 1007,
} as const;

type Empty = Record<string, never>;

// Client → server requests.
export const submitTask = new RequestType<SubmitTaskParams, { taskId: string }, void>('conclave/submitTask');
export const cancelTask = new RequestType<TaskIdParams, { cancelled: boolean }, void>('conclave/cancelTask');
export const retryTask = new RequestType<TaskIdParams, { taskId: string }, void>('conclave/retryTask');
export const undoTask = new RequestType<UndoTaskParams, UndoResult, void>('conclave/undoTask');
export const listTasks = new RequestType<Empty, { tasks: TaskSummary[] }, void>('conclave/listTasks');
export const getTask = new RequestType<TaskIdParams, TaskDetail, void>('conclave/getTask');
export const listAgents = new RequestType<Empty, { agents: AgentInfo[] }, void>('conclave/listAgents');
export const listWhiteboards = new RequestType<Empty, { whiteboards: WhiteboardInfo[] }, void>(
  'conclave/listWhiteboards',
);
export const readWhiteboard = new RequestType<WhiteboardIdParams, Whiteboard, void>('conclave/readWhiteboard');
export const subscribeWhiteboard = new RequestType<WhiteboardIdParams, Whiteboard, void>(
  'conclave/subscribeWhiteboard',
);
export const unsubscribeWhiteboard = new RequestType<WhiteboardIdParams, null, void>('conclave/unsubscribeWhiteboard');
export const listApprovals = new RequestType<Empty, { approvals: ApprovalRequest[] }, void>('conclave/listApprovals');
export const resolveApproval = new RequestType<ResolveApprovalParams, { accepted: boolean }, void>(
  'conclave/resolveApproval',
);
export const errorReport = new RequestType<{ taskId?: string }, { markdown: string; path: string }, void>(
  'conclave/errorReport',
);
export const taskLog = new RequestType<TaskIdParams, { taskId: string; text: string; entries?: TaskLogEntry[] }, void>(
  'conclave/taskLog',
);

// Server → client.
export const requestApproval = new RequestType<ApprovalRequest, ApprovalAnswer | null, void>(
  'conclave/requestApproval',
);
export const taskUpdated = new NotificationType<{ task: TaskSummary }>('conclave/taskUpdated');
export const agentStatus = new NotificationType<AgentStatusParams>('conclave/agentStatus');
export const whiteboardChanged = new NotificationType<Whiteboard>('conclave/whiteboardChanged');
export const approvalResolved = new NotificationType<ApprovalResolvedParams>('conclave/approvalResolved');
export const recoveryStatus = new NotificationType<RecoveryEvent>('conclave/recoveryStatus');

/** Settings of the extension as they become initializationOptions. */
export interface ExtensionSettings {
  llm: { provider?: string; model?: string; baseUrl?: string; apiKeyEnv?: string };
  approvals: { fileChanges?: 'auto' | 'ask'; commands?: 'ask' | 'auto' | 'deny' };
}

export interface InitializationOptions {
  llm?: { provider?: string; model?: string; baseUrl?: string; apiKeyEnv?: string };
  approvals?: { fileChanges?: 'auto' | 'ask'; commands?: 'ask' | 'auto' | 'deny' };
}
