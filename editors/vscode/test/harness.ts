// Drives the real `conclave serve --stdio` with vscode-jsonrpc in a temp scripted workspace.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as rpc from 'vscode-jsonrpc/node';
import type { ServerConclaveCapabilities } from '../src/lsp_ext';
import type { NotificationSource } from '../src/model/rpc';

/** out/test/<file>.js → <repo>/target/debug/conclave */
export const BINARY = process.env.CONCLAVE_BIN ?? resolve(__dirname, '../../../../target/debug/conclave');

export type ScriptStep = Record<string, unknown>;

export const CLIENT_CAPABILITIES = {
  experimental: { conclave: { approvals: true, whiteboards: true, recoveryStatus: true } },
};

export function scriptedWorkspace(script: ScriptStep[], extraToml: string[] = ['writes = "disk"']): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-vscode-')));
  writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
  writeFileSync(
    join(dir, 'conclave.toml'),
    [
      'heartbeatMs = 1000',
      ...extraToml,
      '[llm]',
      'provider = "scripted"',
      'script = "script.json"',
      '[governance]',
      'review = "rules"',
      '[recovery.call]',
      'maxAttempts = 1',
      '[recovery.severity.low]',
      'baseDelayMs = 10',
      '[recovery.severity.medium]',
      'baseDelayMs = 10',
      '[recovery.severity.high]',
      'baseDelayMs = 10',
      '',
    ].join('\n'),
  );
  return dir;
}

export interface Server {
  dir: string;
  connection: rpc.MessageConnection;
  child: ChildProcess;
  exited: Promise<number | null>;
  initializeResult: {
    capabilities: { experimental?: { conclave?: ServerConclaveCapabilities } };
    serverInfo?: { name: string; version?: string };
  };
  /** Resolves when `check` holds; `check` runs now and after every notification/request. */
  until<T>(what: string, check: () => T | undefined | false, ms?: number): Promise<T>;
  /** Call after state changes the harness cannot see (it runs pending waits). */
  poke(): void;
  /** shutdown + exit; resolves with the exit code. */
  shutdown(): Promise<number | null>;
  dispose(): void;
}

export interface StartOptions {
  capabilities?: object;
  initializationOptions?: object;
  /** Registered before `initialize` so no early message is missed. */
  setup?: (connection: rpc.MessageConnection, poke: () => void) => void;
}

export async function startServer(dir: string, options: StartOptions = {}): Promise<Server> {
  const child = spawn(BINARY, ['serve', '--stdio'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout!),
    new rpc.StreamMessageWriter(child.stdin!),
  );
  const waiters = new Set<() => void>();
  const poke = () => {
    for (const waiter of [...waiters]) waiter();
  };
  options.setup?.(connection, poke);
  connection.listen();

  const until = <T>(what: string, check: () => T | undefined | false, ms = 20000): Promise<T> =>
    new Promise<T>((resolvePromise, reject) => {
      const attempt = () => {
        let value: T | undefined | false;
        try {
          value = check();
        } catch (error) {
          cleanup();
          reject(error);
          return;
        }
        if (value !== undefined && value !== false) {
          cleanup();
          resolvePromise(value);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      }, ms);
      // Handlers of specific notifications do not reach the catch-all one, so also look
      // again every 25 ms until the deadline.
      const poll = setInterval(attempt, 25);
      const cleanup = () => {
        clearTimeout(timer);
        clearInterval(poll);
        waiters.delete(attempt);
      };
      waiters.add(attempt);
      attempt();
    });

  const initializeResult = (await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(dir).href,
    workspaceFolders: [{ uri: pathToFileURL(dir).href, name: 'ws' }],
    capabilities: options.capabilities ?? CLIENT_CAPABILITIES,
    initializationOptions: options.initializationOptions,
  })) as Server['initializeResult'];
  await connection.sendNotification('initialized', {});

  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    connection.dispose();
    const remove = () => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    if (child.exitCode !== null) return remove();
    // SIGTERM is a clean shutdown: the server may write its store for a while yet
    // (seen: seconds, after a cancelled task). The workspace goes once it has exited;
    // the running child keeps the test process alive until then.
    child.kill();
    void exited.then(remove);
  };
  return {
    dir,
    connection,
    child,
    exited,
    initializeResult,
    until,
    poke,
    async shutdown() {
      await connection.sendRequest('shutdown');
      await connection.sendNotification('exit');
      return exited;
    },
    dispose,
  };
}

export function fileUri(dir: string, name: string): string {
  return pathToFileURL(join(dir, name)).href;
}

/** The connection as a NotificationSource that also shows `record` every notification it delivers. */
export function recording(
  connection: rpc.MessageConnection,
  record: (method: string, params: unknown) => void,
): NotificationSource {
  return {
    onNotification: (type, handler) =>
      connection.onNotification(type, (params) => {
        record(type.method, params);
        handler(params);
      }),
  };
}
