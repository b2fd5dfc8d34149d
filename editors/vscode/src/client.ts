// Creating the language client: the experimental-capabilities feature, the applyEdit
// middleware that saves what a Conclave edit touched, and the server options.

import * as vscode from 'vscode';
import { type ChildProcess, spawn } from 'node:child_process';
import * as readline from 'node:readline';
import {
  CancellationTokenSource,
  type ClientCapabilities,
  CloseAction,
  type ErrorHandler,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  ResponseError,
  type ServerOptions,
  State,
  type StaticFeature,
} from 'vscode-languageclient/node';
import type { ClientConclaveCapabilities, InitializationOptions } from './lsp_ext';
import { editedUris, type WorkspaceEditLike } from './model/edits';
import { stderrLevel } from './model/startup';

/** Announces `experimental.conclave = { approvals, whiteboards, recoveryStatus }`. */
export class ConclaveCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const conclave: ClientConclaveCapabilities = { approvals: true, whiteboards: true, recoveryStatus: true };
    capabilities.experimental = { ...((capabilities.experimental as object | undefined) ?? {}), conclave };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

/** Saves the documents an applied edit touched, so buffer and disk agree before we answer. */
export async function saveEditedDocuments(edit: WorkspaceEditLike): Promise<void> {
  for (const uri of editedUris(edit)) {
    const target = vscode.Uri.parse(uri);
    const document =
      vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === target.toString()) ??
      (await vscode.workspace.openTextDocument(target));
    if (document.isDirty && !(await document.save())) {
      throw new Error(`could not save ${target.fsPath}`);
    }
  }
}

/**
 * A server that refused `initialize` (1007: the workspace is held by another live server)
 * exits at once; restarting it would fail the same way, so a closed connection after a
 * failed `initialize` is never restarted (no "crashed 5 times" loop). The session tells the
 * user once, with an action.
 */
export interface StartHooks {
  initializeFailed(error: unknown): void;
  /**
   * The server was stopped by someone else (Take Over from another window, a kill): `how`
   * is the signal, or "exit code 0" when it shut down cleanly on one.
   */
  stoppedBySignal(how: string): void;
  /** Every line the server writes to stderr (the reason of a failed start is there too). */
  stderrLine(line: string): void;
}

const STOPPED_ON_PURPOSE = 'The server was stopped by a signal: it is not restarted.';

/**
 * The library shows its own notification when a start fails ("couldn't create connection
 * to server…"); the session shows one message with an action instead, so until the client
 * first runs, its errors go to the Output channel only.
 */
export class ConclaveLanguageClient extends LanguageClient {
  private started = false;
  /** The `conclave serve` process of the current connection. */
  spawned: () => ChildProcess | undefined = () => undefined;

  /** After stop(): a server that did not exit on `exit` within `ms` is killed. */
  async reap(ms = 2000): Promise<void> {
    const child = this.spawned();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await exitOf(child, ms);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  markStarted(): void {
    this.started = true;
  }

  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    if (message === STOPPED_ON_PURPOSE) {
      this.outputChannel.info(message); // the session warned already, once
      return;
    }
    if (this.started) {
      super.error(message, data, showNotification);
      return;
    }
    // The library's account of a failed start (exit code, closed connection, a stack):
    // kept as info; the session logs the one error that says why.
    const why = data instanceof Error ? data.message : typeof data === 'string' ? data : '';
    this.outputChannel.info(`${message}${why ? ` (${why.split('\n')[0]})` : ''}`);
  }
}

/** How `child` ended (code or signal), waiting up to `ms` for its exit to be reported. */
function exitOf(child: ChildProcess | undefined, ms: number): Promise<{ code: number | null; signal: string | null }> {
  if (!child) return Promise.resolve({ code: null, signal: null });
  const now = () => ({ code: child.exitCode, signal: child.signalCode });
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(now());
  return new Promise((done) => {
    const timer = setTimeout(() => done(now()), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal });
    });
  });
}

export function createClient(
  serverPath: string,
  workspaceRoot: string,
  initializationOptions: () => InitializationOptions,
  outputChannel: vscode.LogOutputChannel,
  hooks: StartHooks,
): ConclaveLanguageClient {
  let initializeFailed = false;
  let client: ConclaveLanguageClient | undefined;
  let fallback: ErrorHandler | undefined;
  const errorHandler: ErrorHandler = {
    error: (error, message, count) => {
      fallback ??= client!.createDefaultErrorHandler();
      return fallback.error(error, message, count);
    },
    closed: async () => {
      // Closed before `initialize` answered (or after it failed): the start failed, and the
      // session says why; only a server that was running is restarted.
      if (initializeFailed || client?.state === State.Starting)
        return { action: CloseAction.DoNotRestart, handled: true };
      // Stopped on purpose (SIGTERM/SIGINT/SIGHUP, which the server may also answer by
      // shutting down cleanly with exit code 0: another window took the folder over, or a
      // person stopped it): restarting would take the folder back. Crashes restart.
      const exit = await exitOf(server, 1000);
      const how = exit.signal ?? (exit.code === 0 ? 'exit code 0' : undefined);
      if (how && (how === 'exit code 0' || ['SIGTERM', 'SIGINT', 'SIGHUP'].includes(how))) {
        hooks.stoppedBySignal(how);
        return { action: CloseAction.DoNotRestart, handled: true, message: STOPPED_ON_PURPOSE };
      }
      fallback ??= client!.createDefaultErrorHandler();
      return fallback.closed();
    },
  };
  let server: ChildProcess | undefined;
  const serverOptions: ServerOptions = async () => {
    const child = spawn(serverPath, ['serve', '--stdio'], { cwd: workspaceRoot, stdio: 'pipe' });
    // Without a listener a failed spawn would be thrown in the extension host.
    child.on('error', (error) => outputChannel.error(`Conclave: could not run ${serverPath}: ${error.message}`));
    server = child;
    return child;
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    diagnosticCollectionName: 'conclave',
    outputChannel,
    initializationOptions,
    errorHandler,
    initializationFailedHandler: (error) => {
      initializeFailed = true;
      hooks.initializeFailed(error);
      return false;
    },
    stdioOptions: {
      // Only used for servers whose protocol is not on stdout; ours always is.
      stdout: (input, channel) => {
        readline
          .createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 })
          .on('line', (line) => channel.info(line));
      },
      stderr: (input, channel) => {
        readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on('line', (line) => {
          hooks.stderrLine(line);
          const level = stderrLevel(line);
          if (level === 'error') channel.error(line);
          else if (level === 'trace') channel.trace(line);
        });
      },
    },
    middleware: {
      workspace: {
        handleApplyEdit: async (params, next) => {
          const result = await next(params, new CancellationTokenSource().token);
          if (result instanceof ResponseError || !result.applied) return result;
          try {
            await saveEditedDocuments(params.edit as WorkspaceEditLike);
          } catch (error) {
            outputChannel.warn(`Conclave: applied an edit but ${String(error)}; the server writes the file itself`);
          }
          return result;
        },
      },
    },
  };
  const created = new ConclaveLanguageClient('conclave', 'Conclave', serverOptions, clientOptions);
  client = created;
  created.spawned = () => server;
  created.registerFeature(new ConclaveCapabilitiesFeature());
  created.onDidChangeState(({ newState }) => {
    if (newState === State.Running) created.markStarted();
  });
  return created;
}
