// Whiteboards as read-only virtual documents (conclave-whiteboard:/<id>.md), kept live with
// conclave/subscribeWhiteboard + conclave/whiteboardChanged (WhiteboardStore). A board is
// unsubscribed as soon as no tab shows it any more (VS Code closes the document itself only
// minutes later, and also closes and reopens it on a language change) and subscribed again
// if its document is shown again.

import * as vscode from 'vscode';
import type { Requester } from './model/rpc';
import { WHITEBOARD_SCHEME, whiteboardIdFromPath, whiteboardPath, type WhiteboardStore } from './model/whiteboards';

export function whiteboardUri(id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: WHITEBOARD_SCHEME, path: whiteboardPath(id) });
}

function boardOfTab(tab: vscode.Tab): string | undefined {
  const input = tab.input;
  if (input instanceof vscode.TabInputText && input.uri.scheme === WHITEBOARD_SCHEME) {
    return whiteboardIdFromPath(input.uri.path);
  }
  return undefined;
}

/** Boards some tab shows right now. */
function boardsInTabs(): Set<string> {
  const ids = new Set<string>();
  for (const group of vscode.window.tabGroups.all) {
    for (const tab of group.tabs) {
      const id = boardOfTab(tab);
      if (id) ids.add(id);
    }
  }
  return ids;
}

export class WhiteboardContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly store: WhiteboardStore,
    private readonly requester: () => Requester | undefined,
  ) {
    const sub = store.onDidChange((id) => this.changed.fire(whiteboardUri(id)));
    this.disposables.push(
      { dispose: () => sub.dispose() },
      vscode.window.tabGroups.onDidChangeTabs((event) => {
        const shown = boardsInTabs();
        for (const tab of event.closed) {
          const id = boardOfTab(tab);
          if (id && !shown.has(id)) void this.store.close(this.requester(), id);
        }
        for (const tab of event.opened) {
          const id = boardOfTab(tab);
          // A document VS Code kept cached: follow the board again and refresh it.
          if (id && !this.store.isSubscribed(id)) void this.follow(id);
        }
      }),
    );
  }

  private async follow(id: string): Promise<void> {
    const requester = this.requester();
    if (!requester) return;
    try {
      await this.store.open(requester, id);
    } catch {
      // Unknown board now (an agent of an earlier run): the document keeps its last content.
    }
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = whiteboardIdFromPath(uri.path);
    if (!id) throw new Error(`not a whiteboard: ${uri.toString()}`);
    const known = this.store.content(id);
    if (known !== undefined) return known;
    const requester = this.requester();
    if (!requester) return `# ${id}\n\n_The Conclave server is not running._\n`;
    return (await this.store.open(requester, id)).content;
  }

  /** After a restart: subscribe again to every board still shown, and show what it holds now. */
  async resubscribe(requester: Requester): Promise<void> {
    await this.store.resubscribe(requester);
    for (const id of this.store.subscribed()) this.changed.fire(whiteboardUri(id));
  }

  dispose(): void {
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
