// "Take Over": stop the `conclave serve` that holds this workspace so this window can
// serve it. The holder is typically the server of a window that was reloaded or closed
// while its extension host lingers (code-server keeps it for minutes); a live window whose
// server is stopped this way shows the workspace as busy in turn. Stopping a server is
// safe: every step is checkpointed and a write lands whole or not at all. No 'vscode'
// import: the tests use it as is.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The command line of a process, or undefined when it does not exist (or cannot be read). */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    try {
      return execFileSync('ps', ['-p', String(pid), '-o', 'command='], { encoding: 'utf8' }).trim() || undefined;
    } catch {
      return undefined;
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export type TakeOverResult = { ok: true } | { ok: false; message: string };

/**
 * Stops the server `pid` (SIGTERM, then SIGKILL after `graceMs`) once its command line
 * shows it is a `conclave serve`; resolves when it is gone.
 */
export async function stopHolder(pid: number, graceMs = 3000, waitMs = 10000): Promise<TakeOverResult> {
  const command = commandLine(pid);
  if (command === undefined || !alive(pid)) return { ok: true }; // already gone
  if (!/conclave/.test(command) || !/\bserve\b/.test(command)) {
    return { ok: false, message: `process ${pid} is not a conclave server (${command}); nothing was stopped` };
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch (error) {
    return { ok: false, message: `could not stop pid ${pid}: ${(error as Error).message}` };
  }
  const started = Date.now();
  let killed = false;
  while (alive(pid)) {
    const waited = Date.now() - started;
    if (waited > waitMs) return { ok: false, message: `pid ${pid} did not exit` };
    if (!killed && waited > graceMs) {
      killed = true;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { ok: true };
}
