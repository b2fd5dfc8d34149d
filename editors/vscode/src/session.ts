// The running Conclave session: starts (and restarts) the language client after checking
// the binary, feeds the pure models from the server's notifications, and owns the UI parts.

import * as vscode from 'vscode';
import { type LanguageClient, State } from 'vscode-languageclient/node';
import { ApprovalsUi, DIFF_SCHEME, DiffContentProvider } from './approvals_ui';
import { checkBinary } from './binary';
import { CHECK_SCHEME, CheckOutputProvider } from './check_output';
import { type ConclaveLanguageClient, createClient } from './client';
import { FinalReportProvider, REPORT_SCHEME } from './final_report';
import { GeneratingFilesDecorations } from './decorations';
import * as lsp from './lsp_ext';
import { ConclaveModels } from './model/feed';
import { initializationOptions, type RawSettings } from './model/settings';
import { describeStartFailure } from './model/startup';
import type { AgentTreeNode } from './model/agents';
import type { TaskTreeNode } from './model/tasks';
import { WHITEBOARD_SCHEME } from './model/whiteboards';
import { StatusBar } from './status_bar';
import { TASK_LOG_SCHEME, TaskLogContentProvider } from './task_log';
import { lockHolder, stopHolder } from './takeover';
import { AgentsTreeProvider, TasksTreeProvider } from './trees';
import { WhiteboardContentProvider } from './whiteboard';

function readSettings(): { serverPath: string; raw: RawSettings } {
  const config = vscode.workspace.getConfiguration('conclave');
  return {
    serverPath: config.get<string>('serverPath', ''),
    raw: {
      llm: {
        provider: config.get<string>('llm.provider', ''),
        model: config.get<string>('llm.model', ''),
        baseUrl: config.get<string>('llm.baseUrl', ''),
        apiKeyEnv: config.get<string>('llm.apiKeyEnv', ''),
      },
      approvals: {
        fileChanges: config.get<string>('approvals.fileChanges', ''),
        commands: config.get<string>('approvals.commands', ''),
      },
    },
  };
}

export class Session implements vscode.Disposable {
  /** Tasks, agents, status, whiteboards and approvals, fed by the server (no 'vscode' inside). */
  readonly models = new ConclaveModels(() => this.runningOrUndefined());
  readonly output = vscode.window.createOutputChannel('Conclave', { log: true });
  readonly tasksTree: vscode.TreeView<TaskTreeNode>;
  private readonly agentsTree: vscode.TreeView<AgentTreeNode>;
  readonly approvals: ApprovalsUi;
  private readonly statusBar: StatusBar;
  private readonly whiteboardProvider: WhiteboardContentProvider;
  private readonly disposables: vscode.Disposable[] = [];
  private clientDisposables: { dispose(): void }[] = [];
  private current: ConclaveLanguageClient | undefined;
  private starting: Promise<void> | undefined;
  /** The last missing-binary message shown, so a repeated start does not show it again. */
  private shownBinaryMessage: string | undefined;
  /** The error `initialize` failed with, for the current client. */
  private initializeError: unknown;
  /** The last lines the current server wrote to stderr (a failed start is explained there). */
  private stderrTail: string[] = [];

  constructor() {
    const diffs = new DiffContentProvider();
    this.approvals = new ApprovalsUi(this.models, diffs, () => this.runningOrUndefined() !== undefined);
    this.statusBar = new StatusBar(this.models.status);
    this.whiteboardProvider = new WhiteboardContentProvider(this.models.whiteboards, () => this.runningOrUndefined());
    const taskLogs = new TaskLogContentProvider(this.models.tasks, () => this.runningOrUndefined());
    const reports = new FinalReportProvider(this.models.details);
    const tasksProvider = new TasksTreeProvider(this.models.tasks, this.models.details);
    const agentsProvider = new AgentsTreeProvider(this.models.agents);
    this.tasksTree = vscode.window.createTreeView('conclave.tasks', {
      treeDataProvider: tasksProvider,
      showCollapseAll: true,
    });
    this.agentsTree = vscode.window.createTreeView('conclave.agents', { treeDataProvider: agentsProvider });
    const decorations = new GeneratingFilesDecorations(this.models.tasks);
    this.disposables.push(
      this.output,
      this.statusBar,
      this.approvals,
      this.whiteboardProvider,
      tasksProvider,
      agentsProvider,
      decorations,
      this.tasksTree,
      this.agentsTree,
      // The Agents view counts tokens for the task selected in the Tasks tree.
      this.tasksTree.onDidChangeSelection(({ selection }) => {
        const node = selection[0];
        this.models.selectTask(node && node.kind !== 'approval' ? node.task.taskId : undefined);
      }),
      this.models.agents.onDidChange(() => (this.agentsTree.description = this.models.agents.usageScope())),
      vscode.workspace.registerTextDocumentContentProvider(CHECK_SCHEME, new CheckOutputProvider(this.models.details)),
      vscode.workspace.registerTextDocumentContentProvider(WHITEBOARD_SCHEME, this.whiteboardProvider),
      vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
      taskLogs,
      vscode.workspace.registerTextDocumentContentProvider(TASK_LOG_SCHEME, taskLogs),
      reports,
      vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
      vscode.window.registerFileDecorationProvider(decorations),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (
          ['conclave.serverPath', 'conclave.llm', 'conclave.approvals'].some((key) => event.affectsConfiguration(key))
        ) {
          void this.restart();
        }
      }),
    );
  }

  get tasks() {
    return this.models.tasks;
  }

  get agents() {
    return this.models.agents;
  }

  private runningOrUndefined(): LanguageClient | undefined {
    return this.current?.state === State.Running ? this.current : undefined;
  }

  /** The running client, or undefined after telling the user the server is not running. */
  runningClient(): LanguageClient | undefined {
    const client = this.runningOrUndefined();
    if (!client)
      void vscode.window.showWarningMessage('Conclave: the server is not running. Run "Conclave: Restart Server".');
    return client;
  }

  workspaceRoot(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const root = this.workspaceRoot();
    if (!root) {
      this.statusBar.showStopped('Conclave: no folder', 'Open a folder to use Conclave.');
      return;
    }
    const settings = readSettings();
    const remote = vscode.env.remoteName;
    const binary = await checkBinary(settings.serverPath, root, process.env, undefined, remote);
    if (!binary.ok) {
      this.statusBar.showStopped('Conclave: no server', binary.message);
      if (this.shownBinaryMessage === binary.message) return;
      this.shownBinaryMessage = binary.message;
      this.output.error(binary.message);
      // Not awaited: a start that waited for the toast to be dismissed would hold off every
      // restart, also the one a changed `conclave.serverPath` asks for.
      void vscode.window.showErrorMessage(binary.message, 'Open Settings').then((choice) => {
        if (choice === 'Open Settings') {
          // A remote window takes the path from the Remote settings only (see checkBinary).
          const settingsCommand = remote ? 'workbench.action.openRemoteSettings' : 'workbench.action.openSettings';
          void vscode.commands.executeCommand(settingsCommand, 'conclave.serverPath');
        }
      });
      return;
    }
    this.shownBinaryMessage = undefined;
    this.output.info(`Conclave: starting ${binary.path} (conclave ${binary.version}) in ${root}`);
    const resolved = initializationOptions(settings.raw, vscode.workspace.isTrusted);
    if (resolved.notice) {
      this.output.warn(resolved.notice);
      void vscode.window.showWarningMessage(resolved.notice);
    }
    const client = createClient(
      binary.path,
      root,
      () => initializationOptions(readSettings().raw, vscode.workspace.isTrusted).initializationOptions,
      this.output,
      {
        initializeFailed: (error) => (this.initializeError = error),
        stoppedBySignal: (signal) => {
          if (this.current !== client) return;
          const message = `Conclave: the server was stopped (${signal}), perhaps by Take Over in another window; it is not restarted here.`;
          this.output.warn(message);
          this.statusBar.showStopped('Conclave: stopped', `${message}\nClick to restart it.`);
          void vscode.window.showWarningMessage(message, 'Restart Server').then((choice) => {
            if (choice === 'Restart Server' && this.current === client) void this.restart();
          });
        },
        stderrLine: (line) => {
          if (this.current !== client) return;
          this.stderrTail.push(line);
          if (this.stderrTail.length > 50) this.stderrTail.shift();
        },
      },
    );
    this.initializeError = undefined;
    this.stderrTail = [];
    this.current = client;
    this.wire(client);
    try {
      await client.start();
    } catch (error) {
      // The server may exit right after its error answer, before the client read it:
      // stderr has the reason then. Give the pipe a moment to deliver its last lines.
      await new Promise((resolve) => setTimeout(resolve, 200));
      this.startFailed(client, this.initializeError ?? error, lockHolder(root));
      return;
    }
    await this.refresh();
    await this.whiteboardProvider.resubscribe(client);
  }

  /** `conclave.server` for the views' welcome text: running, busy or stopped. */
  private setServerState(state: 'running' | 'busy' | 'stopped'): void {
    void vscode.commands.executeCommand('setContext', 'conclave.server', state);
  }

  /** One message for a start that failed, with an action; the client is not restarted. */
  private startFailed(client: LanguageClient, error: unknown, holder?: ReturnType<typeof lockHolder>): void {
    const failure = describeStartFailure(error, this.stderrTail, holder);
    this.setServerState(failure.kind === 'workspace_busy' ? 'busy' : 'stopped');
    this.output.error(
      failure.kind === 'workspace_busy' ? `${failure.message} The server said: ${failure.said}` : failure.message,
    );
    if (failure.kind === 'workspace_busy') {
      this.statusBar.showStopped(
        `Conclave: busy${failure.holder ? ` (${failure.holder})` : ''}`,
        `${failure.message}\nClick to try again.`,
      );
    } else {
      this.statusBar.showStopped('Conclave: stopped', `${failure.message}\nClick to restart.`);
    }
    void vscode.window.showErrorMessage(failure.message, ...failure.actions).then((choice) => {
      if (this.current !== client) return; // restarted meanwhile
      if (choice === 'Show Output') this.output.show(true);
      else if (choice === 'Retry' || choice === 'Restart Server') void this.restart();
      else if (choice === 'Take Over' && failure.kind === 'workspace_busy' && failure.holderPid) {
        void this.takeOver(failure.holderPid);
      }
    });
  }

  /** Stops the server holding the workspace, then starts ours. */
  private async takeOver(pid: number): Promise<void> {
    this.output.info(`Conclave: taking the workspace over from pid ${pid}`);
    const result = await stopHolder(pid);
    if (!result.ok) {
      this.output.error(`Conclave: ${result.message}`);
      void vscode.window.showErrorMessage(`Conclave: ${result.message}.`, 'Show Output').then((choice) => {
        if (choice === 'Show Output') this.output.show(true);
      });
      return;
    }
    await this.restart();
  }

  private wire(client: LanguageClient): void {
    this.clientDisposables = [
      ...this.models.attach(client, (what, error) => this.output.warn(`Conclave: ${what} failed: ${String(error)}`)),
      this.models.onRecovery((event) => {
        if (event.action === 'gave_up') this.output.warn(`Conclave gave up: ${event.message}`);
      }),
      client.onRequest(lsp.requestApproval, (approval) => this.approvals.onRequest(approval)),
      client.onDidChangeState(({ newState }) => {
        if (newState === State.Stopped && this.current === client && this.initializeError === undefined) {
          this.statusBar.showStopped('Conclave: stopped', 'The Conclave server stopped. Click to restart it.');
          this.setServerState('stopped');
        } else if (newState === State.Running) {
          this.statusBar.render();
          this.setServerState('running');
        }
      }),
    ];
  }

  /** Loads everything the server knows (tasks, agents, pending approvals). */
  async refresh(): Promise<void> {
    try {
      await this.models.refresh();
    } catch (error) {
      this.output.warn(`Conclave: refresh failed: ${String(error)}`);
    }
  }

  async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    for (const d of this.clientDisposables) d.dispose();
    this.clientDisposables = [];
    if (client) {
      // A client whose start failed has nothing to stop (its server is gone).
      if (client.state === State.Running) {
        try {
          await client.stop(5000);
        } catch (error) {
          this.output.warn(`Conclave: stopping the server: ${String(error)}`);
        }
      }
      await client.dispose().catch(() => undefined);
      await client.reap();
    }
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  /** Shows a task in the Tasks tree. */
  async revealTask(taskId: string): Promise<void> {
    const task = this.models.tasks.task(taskId);
    if (!task) return;
    await this.tasksTree.reveal({ kind: 'task', task }, { select: true, focus: true, expand: true });
  }

  dispose(): void {
    for (const d of this.clientDisposables) d.dispose();
    for (const d of this.disposables) d.dispose();
    this.models.dispose();
  }
}
