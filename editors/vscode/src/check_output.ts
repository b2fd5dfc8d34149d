// A task's check as a read-only virtual document (conclave-check:/<taskId>/<index>/<name>.log):
// what ran and its whole output, one click away from the check in the Tasks tree.

import * as vscode from 'vscode';
import type { CheckResult } from './lsp_ext';
import { checkDocument, checkPath, parseCheckPath } from './model/checks';
import type { TaskDetails } from './model/details';

export const CHECK_SCHEME = 'conclave-check';

/** `at` in the query finds the same check when a fix round ran the task's checks again. */
export function checkUri(taskId: string, index: number, check: CheckResult): vscode.Uri {
  return vscode.Uri.from({ scheme: CHECK_SCHEME, path: checkPath(taskId, index, check), query: `at=${check.at}` });
}

export class CheckOutputProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly details: TaskDetails) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const where = parseCheckPath(uri.path);
    if (!where) throw new Error(`not a check: ${uri.toString()}`);
    const detail = await this.details.ensure(where.taskId);
    const checks = detail?.checks ?? [];
    const at = new URLSearchParams(uri.query).get('at');
    // The check clicked: the one at its place when it is still the same, else the same
    // check moved elsewhere, else whatever holds its place now.
    const same = (c: CheckResult) => c.at === at && checkPath(where.taskId, where.index, c) === uri.path;
    const atPlace = checks[where.index];
    const check = atPlace && same(atPlace) ? atPlace : (checks.find(same) ?? atPlace);
    if (!detail || !check) return `The check is no longer known to the Conclave server (task ${where.taskId}).\n`;
    return checkDocument(detail, check);
  }
}
