// Entry point: activate creates the session, registers the commands and starts the server;
// deactivate stops it (shutdown + exit).

import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { Session } from './session';
import { registerUndo } from './undo_ui';

let session: Session | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  session = new Session();
  context.subscriptions.push(session, ...registerCommands(session), ...registerUndo(session));
  await session.start();
}

export async function deactivate(): Promise<void> {
  const current = session;
  session = undefined;
  await current?.stop();
}
