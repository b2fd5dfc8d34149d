// Finding and checking the conclave binary before the client starts, so a missing or wrong
// binary gives one clear message with the fix. No 'vscode' import: the tests use it as is.

import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

export type BinaryCheck =
  | { ok: true; path: string; version: string }
  | { ok: false; reason: 'not_found' | 'not_executable' | 'version_failed'; path: string; message: string };

const FIX =
  'Install it (`cargo install --path .` in the Conclave repository, or put `conclave` on your PATH) ' +
  'or set "conclave.serverPath" to the full path of the binary.';

/** Where the binary would be: the setting (absolute, or relative to the workspace), else PATH. */
export function locateBinary(
  serverPath: string | undefined,
  workspaceRoot: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const configured = serverPath?.trim();
  if (configured) {
    const expanded = configured.startsWith('~/') && env.HOME ? join(env.HOME, configured.slice(2)) : configured;
    if (isAbsolute(expanded)) return expanded;
    if (expanded.includes('/') || expanded.includes('\\')) return resolve(workspaceRoot ?? process.cwd(), expanded);
    return searchPath(expanded, env);
  }
  return searchPath(process.platform === 'win32' ? 'conclave.exe' : 'conclave', env);
}

function searchPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * In a remote window (SSH, WSL, a container, code-server) the binary is looked for on the
 * remote machine, and VS Code takes a machine-scoped setting such as `conclave.serverPath`
 * from the Remote settings only: one put in the User settings is ignored there.
 */
function remoteHint(remoteName: string | undefined): string {
  return remoteName
    ? ` This is a remote window (${remoteName}): the path is one on the remote machine, and VS Code reads "conclave.serverPath" from the Remote settings, not the User settings.`
    : '';
}

/**
 * Checks that the binary exists, is executable and answers `--version` with "conclave x.y.z".
 * `remoteName` is `vscode.env.remoteName`: a missing binary's message then says where the
 * setting must go.
 */
export async function checkBinary(
  serverPath: string | undefined,
  workspaceRoot: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 10000,
  remoteName?: string,
): Promise<BinaryCheck> {
  const path = locateBinary(serverPath, workspaceRoot, env);
  const shown = serverPath?.trim() || 'conclave';
  if (!path) {
    return {
      ok: false,
      reason: 'not_found',
      path: shown,
      message: `Conclave: the server binary "${shown}" was not found${serverPath?.trim() ? '' : ' on PATH'}. ${FIX}${remoteHint(remoteName)}`,
    };
  }
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new Error('not a file');
  } catch {
    return {
      ok: false,
      reason: 'not_found',
      path,
      message: `Conclave: the server binary ${path} does not exist. ${FIX}${remoteHint(remoteName)}`,
    };
  }
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return {
      ok: false,
      reason: 'not_executable',
      path,
      message: `Conclave: ${path} is not executable. Run \`chmod +x ${path}\` or set "conclave.serverPath" to a working binary.`,
    };
  }
  return new Promise((done) => {
    execFile(path, ['--version'], { timeout: timeoutMs, env }, (error, stdout, stderr) => {
      const out = String(stdout).trim();
      if (error || !/^conclave \S+/.test(out)) {
        const why = error
          ? (error.message.split('\n')[0] ?? String(error))
          : `it printed "${out || String(stderr).trim()}"`;
        done({
          ok: false,
          reason: 'version_failed',
          path,
          message: `Conclave: \`${path} --version\` failed (${why}); this is not a working Conclave binary. ${FIX}`,
        });
      } else {
        done({ ok: true, path, version: out.replace(/^conclave\s+/, '') });
      }
    });
  });
}
