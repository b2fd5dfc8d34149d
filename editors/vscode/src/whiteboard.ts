// Whiteboards as read-only virtual documents (conclave-whiteboard:/<id>.md), kept live with
// conclave/subscribeWhiteboard + conclave/whiteboardChanged and unsubscribed on close.

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import * as lsp from './lsp_ext';
import { WHITEBOARD_SCHEME, whiteboardIdFromPath, whiteboardPath, type WhiteboardStore } from './model/whiteboards';

export function whiteboardUri(id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: WHITEBOARD_SCHEME, path: whiteboardPath(id) });
}

export class WhiteboardContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly store: WhiteboardStore,
    private readonly client: () => LanguageClient | undefined,
  ) {
    const sub = store.onDidChange((id) => this.changed.fire(whiteboardUri(id)));
    this.disposables.push({ dispose: () => sub.dispose() });
    this.disposables.push(
      vscode.workspace.onDidCloseTextDocument((document) => {
        if (document.uri.scheme !== WHITEBOARD_SCHEME) return;
        const id = whiteboardIdFromPath(document.uri.path);
        if (id && this.store.closed(id)) {
          const client = this.client();
          if (client?.isRunning()) {
            client.sendRequest(lsp.unsubscribeWhiteboard, { id }).catch(() => undefined);
          }
        }
      }),
    );
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = whiteboardIdFromPath(uri.path);
    if (!id) throw new Error(`not a whiteboard: ${uri.toString()}`);
    if (!this.store.isSubscribed(id)) {
      const client = this.client();
      if (!client?.isRunning()) return `# ${id}\n\n_The Conclave server is not running._\n`;
      this.store.opened(id);
      try {
        this.store.apply(await client.sendRequest(lsp.subscribeWhiteboard, { id }));
      } catch (error) {
        this.store.closed(id);
        throw error;
      }
    }
    return this.store.content(id) ?? '';
  }

  /** After a restart: subscribe again to every board still open. */
  async resubscribe(client: LanguageClient): Promise<void> {
    for (const id of this.store.subscribed()) {
      try {
        const board = await client.sendRequest(lsp.subscribeWhiteboard, { id });
        this.store.apply(board);
        this.changed.fire(whiteboardUri(id));
      } catch {
        // The board is gone (an agent of an earlier run): leave the document as it was.
      }
    }
  }

  dispose(): void {
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
