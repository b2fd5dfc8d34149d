// Why the server did not start, as one message with the right action, and how its stderr
// reaches the Output channel. No 'vscode' import: the tests use it as is.

import { ErrorCodes } from '../lsp_ext';

export type StartFailure =
  | {
      /** Another live `conclave serve` holds the workspace (error 1007 on `initialize`). */
      kind: 'workspace_busy';
      message: string;
      /** What the server (or the connection) said. */
      said: string;
      /** "pid 1234" when the server said which process holds the lock. */
      holder?: string;
      holderPid?: number;
      actions: readonly string[];
    }
  | { kind: 'other'; message: string; said: string; actions: readonly ['Show Output', 'Restart Server'] };

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

/** The pid holding the workspace lock, from the error's data (`pid`, `holderPid`, `holder.pid`) or its message. */
function holderPidOf(error: unknown, message: string): number | undefined {
  const data = (error as { data?: unknown } | null)?.data;
  const candidates: unknown[] = [];
  if (data && typeof data === 'object') {
    const d = data as Record<string, unknown>;
    candidates.push(d.pid, d.holderPid);
    if (d.holder && typeof d.holder === 'object') candidates.push((d.holder as Record<string, unknown>).pid);
  }
  const match = /\bpid (\d+)/.exec(message);
  if (match) candidates.push(match[1]);
  for (const candidate of candidates) {
    const pid = typeof candidate === 'string' ? Number(candidate) : candidate;
    if (typeof pid === 'number' && Number.isInteger(pid) && pid > 0) return pid;
  }
  return undefined;
}

/** The editor the holder serves, from `data.holder.client` ("Visual Studio Code 1.100.3"). */
function holderEditorOf(error: unknown): string | undefined {
  const holder = ((error as { data?: { holder?: unknown } } | null)?.data?.holder ?? undefined) as
    { client?: { name?: unknown; version?: unknown } } | undefined;
  const name = holder?.client?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const version = holder?.client?.version;
  return typeof version === 'string' && version ? `${name} ${version}` : name;
}

/** The colour codes (SGR escapes) tracing puts around a level when stderr is a terminal. */
// eslint-disable-next-line no-control-regex -- matching ESC (\x1b) is the point
const ANSI_COLOUR = /\x1b\[[0-9;]*m/g;

/** A stderr log line without its timestamp and level. */
function logText(line: string): string {
  return line
    .replace(ANSI_COLOUR, '')
    .replace(/^\S+\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+/, '')
    .trim();
}

/**
 * One message for a failed start (`initialize` refused, or the process would not run).
 * `stderr` holds the server's last stderr lines: a server refused with 1007 exits at once,
 * and the client may see the connection close before it reads the error answer; the live
 * holder of `.conclave/serve.lock` (`lockHolder`) is the last resort.
 */
export function describeStartFailure(
  error: unknown,
  stderr: readonly string[] = [],
  lockHolder?: { pid: number; client?: { name?: string; version?: string } },
): StartFailure {
  let raw = errorMessage(error).trim();
  let code = (error as { code?: unknown } | null)?.code;
  const busyLine = stderr.map(logText).find((line) => /already serving/.test(line));
  if (code !== ErrorCodes.InvalidState && busyLine) {
    code = ErrorCodes.InvalidState;
    raw = busyLine;
  } else if (code !== ErrorCodes.InvalidState && lockHolder && /connection got disposed|got closed/i.test(raw)) {
    // Neither the answer nor stderr made it, but the lock file names a live holder.
    code = ErrorCodes.InvalidState;
    error = { code, message: raw, data: { holder: lockHolder } };
    raw = `another \`conclave serve\` (pid ${lockHolder.pid}) holds .conclave/serve.lock`;
  } else if (code !== ErrorCodes.InvalidState && /connection got disposed|got closed/i.test(raw)) {
    // The connection's own words say nothing: the server's last error line says why.
    const errors = stderr.filter((line) => / ERROR /.test(line) || stderrLevel(line) === 'error').map(logText);
    if (errors.length > 0) raw = errors[errors.length - 1];
  }
  if (code === ErrorCodes.InvalidState) {
    const holderPid = holderPidOf(error, raw);
    const holder = holderPid ? `pid ${holderPid}` : undefined;
    const editor = holderEditorOf(error);
    const said = [holder, editor ? `for ${editor}` : undefined].filter(Boolean).join(', ');
    const who = said ? `another Conclave server (${said})` : 'another Conclave server';
    return {
      kind: 'workspace_busy',
      said: raw,
      holder,
      holderPid,
      message:
        `Conclave: ${who} already serves this folder, for another window or a Neovim. ` +
        (holderPid
          ? 'Close it there and Retry, or Take Over to stop that server (a reloaded window leaves one behind for a while).'
          : 'Close it there, then Retry.'),
      actions: holderPid ? ['Take Over', 'Retry', 'Show Output'] : ['Retry', 'Show Output'],
    };
  }
  return {
    kind: 'other',
    said: raw,
    message: `Conclave: the server did not start: ${raw}`,
    actions: ['Show Output', 'Restart Server'],
  };
}

export type StderrLevel = 'trace' | 'error';

/**
 * Where a line the server wrote to stderr belongs. Its log lines (`<time>  INFO …`) also
 * reach the editor as window/logMessage, so shown again they would appear twice, once as a
 * red [error]: they go to the trace level (visible with "Set Log Level… Trace"). Anything
 * else on stderr (a panic, a fatal error on exit) is shown as an error.
 */
export function stderrLevel(line: string): StderrLevel | undefined {
  if (line.trim() === '') return undefined;
  const plain = line.replace(ANSI_COLOUR, '');
  return /^\S+\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s/.test(plain) ? 'trace' : 'error';
}
