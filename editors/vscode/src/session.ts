// The running Conclave session: starts (and restarts) the language client after checking
// the binary, feeds the pure models from the server's notifications, and owns the UI parts.

import * as vscode from 'vscode';
import { type LanguageClient, State } from 'vscode-languageclient/node';
import { ApprovalsUi, DIFF_SCHEME, DiffContentProvider } from './approvals_ui';
import { checkBinary } from './binary';
import { createClient } from './client';
import { GeneratingFilesDecorations } from './decorations';
import * as lsp from './lsp_ext';
import { AgentsModel } from './model/agents';
import { initializationOptions, type RawSettings } from './model/settings';
import { StatusModel } from './model/status';
import { TasksModel } from './model/tasks';
import { WHITEBOARD_SCHEME, WhiteboardStore } from './model/whiteboards';
import { StatusBar } from './status_bar';
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
  readonly agents = new AgentsModel();
  readonly tasks = new TasksModel((id) => this.agents.name(id));
  readonly status = new StatusModel();
  readonly whiteboards = new WhiteboardStore();
  readonly output = vscode.window.createOutputChannel('Conclave', { log: true });
  readonly tasksTree: vscode.TreeView<import('./model/tasks').TaskTreeNode>;
  readonly approvals: ApprovalsUi;
  private readonly statusBar: StatusBar;
  private readonly whiteboardProvider: WhiteboardContentProvider;
  private readonly disposables: vscode.Disposable[] = [];
  private current: LanguageClient | undefined;
  private starting: Promise<void> | undefined;

  constructor() {
    const diffs = new DiffContentProvider();
    this.approvals = new ApprovalsUi(this.tasks, diffs, () => this.client);
    this.statusBar = new StatusBar(this.status);
    this.whiteboardProvider = new WhiteboardContentProvider(this.whiteboards, () => this.client);
    const tasksProvider = new TasksTreeProvider(this.tasks);
    const agentsProvider = new AgentsTreeProvider(this.agents);
    this.tasksTree = vscode.window.createTreeView('conclave.tasks', { treeDataProvider: tasksProvider, showCollapseAll: true });
    const decorations = new GeneratingFilesDecorations(this.tasks);
    this.disposables.push(
      this.output,
      this.statusBar,
      this.whiteboardProvider,
      tasksProvider,
      agentsProvider,
      decorations,
      this.tasksTree,
      vscode.window.createTreeView('conclave.agents', { treeDataProvider: agentsProvider }),
      vscode.workspace.registerTextDocumentContentProvider(WHITEBOARD_SCHEME, this.whiteboardProvider),
      vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
      vscode.window.registerFileDecorationProvider(decorations),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (['conclave.serverPath', 'conclave.llm', 'conclave.approvals'].some((key) => event.affectsConfiguration(key))) {
          void this.restart();
        }
      }),
    );
  }

  get client(): LanguageClient | undefined {
    return this.current;
  }

  /** The running client, or undefined after telling the user the server is not running. */
  runningClient(): LanguageClient | undefined {
    if (this.current?.state === State.Running) return this.current;
    void vscode.window.showWarningMessage('Conclave: the server is not running. Run "Conclave: Restart Server".');
    return undefined;
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
    const binary = await checkBinary(settings.serverPath, root);
    if (!binary.ok) {
      this.output.error(binary.message);
      this.statusBar.showStopped('Conclave: no server', binary.message);
      const choice = await vscode.window.showErrorMessage(binary.message, 'Open Settings');
      if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'conclave.serverPath');
      }
      return;
    }
    this.output.info(`Conclave: starting ${binary.path} (conclave ${binary.version}) in ${root}`);
    const trusted = vscode.workspace.isTrusted;
    const resolved = initializationOptions(settings.raw, trusted);
    if (resolved.notice) {
      this.output.warn(resolved.notice);
      void vscode.window.showWarningMessage(resolved.notice);
    }
    const client = createClient(binary.path, root, () => initializationOptions(readSettings().raw, vscode.workspace.isTrusted).initializationOptions, this.output);
    this.current = client;
    this.wire(client);
    try {
      await client.start();
    } catch (error) {
      const message = `Conclave: the server did not start: ${error instanceof Error ? error.message : String(error)}`;
      this.output.error(message);
      this.statusBar.showStopped('Conclave: stopped', message);
      void vscode.window.showErrorMessage(message);
      return;
    }
    await this.refresh(client);
    await this.whiteboardProvider.resubscribe(client);
  }

  private wire(client: LanguageClient): void {
    client.onNotification(lsp.taskUpdated, ({ task }) => {
      this.tasks.updateTask(task);
      this.status.updateTask(task);
      this.statusBar.render();
    });
    client.onNotification(lsp.recoveryStatus, (event) => {
      this.status.recovery(event);
      this.statusBar.render();
      if (event.action === 'gave_up') this.output.warn(`Conclave gave up: ${event.message}`);
    });
    client.onNotification(lsp.agentStatus, (params) => {
      if (!this.agents.applyStatus(params)) void this.refreshAgents(client);
    });
    client.onNotification(lsp.whiteboardChanged, (board) => {
      if (this.whiteboards.isSubscribed(board.id)) this.whiteboards.apply(board);
    });
    client.onRequest(lsp.requestApproval, (approval, token) => this.approvals.onRequest(approval, token));
    client.onDidChangeState(({ newState }) => {
      if (newState === State.Stopped && this.current === client) {
        this.statusBar.showStopped('Conclave: stopped', 'The Conclave server stopped. Click to restart it.');
      } else if (newState === State.Running) {
        this.statusBar.render();
      }
    });
  }

  private async refreshAgents(client: LanguageClient): Promise<void> {
    try {
      this.agents.setAgents((await client.sendRequest(lsp.listAgents, {})).agents);
    } catch (error) {
      this.output.warn(`Conclave: listAgents failed: ${String(error)}`);
    }
  }

  /** Loads everything the server knows (tasks, agents, pending approvals). */
  async refresh(client: LanguageClient | undefined = this.current): Promise<void> {
    if (!client || client.state !== State.Running) return;
    try {
      const [{ tasks }, { approvals }] = await Promise.all([
        client.sendRequest(lsp.listTasks, {}),
        client.sendRequest(lsp.listApprovals, {}),
      ]);
      this.tasks.setTasks(tasks);
      this.status.setTasks(tasks);
      this.tasks.setApprovals(approvals);
      this.statusBar.render();
    } catch (error) {
      this.output.warn(`Conclave: refresh failed: ${String(error)}`);
    }
    await this.refreshAgents(client);
  }

  async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.warn(`Conclave: stopping the server: ${String(error)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  /** Shows a task in the Tasks tree. */
  async revealTask(taskId: string): Promise<void> {
    const task = this.tasks.task(taskId);
    if (!task) return;
    await this.tasksTree.reveal({ kind: 'task', task }, { select: true, focus: true, expand: true });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.tasks.dispose();
    this.agents.dispose();
    this.whiteboards.dispose();
  }
}
