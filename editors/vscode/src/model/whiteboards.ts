// Whiteboard contents as a store: a board is subscribed (conclave/subscribeWhiteboard) when
// its document opens, kept live by conclave/whiteboardChanged (versions only go forward),
// and unsubscribed when its last document closes. Imports nothing from 'vscode': the
// extension and the tests drive it through the same Requester.

import * as lsp from '../lsp_ext';
import { Emitter } from './event';
import type { Requester } from './rpc';

export const WHITEBOARD_SCHEME = 'conclave-whiteboard';

/** The virtual document path of a board: "/global.md", "/agent:<id>.md". */
export function whiteboardPath(id: string): string {
  return `/${id}.md`;
}

/** The board id of a virtual document path, or undefined when it is not one. */
export function whiteboardIdFromPath(path: string): string | undefined {
  const match = /^\/(.+)\.md$/.exec(path);
  return match ? match[1] : undefined;
}

export class WhiteboardStore {
  private readonly boards = new Map<string, lsp.Whiteboard>();
  /** Boards we are subscribed to, with the subscription in flight until it answers. */
  private readonly subscriptions = new Map<string, Promise<lsp.Whiteboard>>();
  private readonly changed = new Emitter<string>();
  /** Fires with the board id whenever its content changes. */
  readonly onDidChange = this.changed.event;

  /**
   * Applies a board (subscribe/read result or conclave/whiteboardChanged) if we follow it;
   * returns whether it changed what we show. Older or equal versions are ignored.
   */
  apply(board: lsp.Whiteboard): boolean {
    if (!this.subscriptions.has(board.id)) return false;
    const known = this.boards.get(board.id);
    if (known && known.version >= board.version) return false;
    this.boards.set(board.id, board);
    this.changed.fire(board.id);
    return true;
  }

  /**
   * A document of the board is shown: subscribes unless already subscribed, and resolves
   * with the board. A failed subscription (1003, unknown board) leaves nothing behind.
   */
  open(requester: Requester, id: string): Promise<lsp.Whiteboard> {
    const existing = this.subscriptions.get(id);
    if (existing) return existing.then(() => this.boards.get(id) ?? existing);
    const subscribing = requester.sendRequest(lsp.subscribeWhiteboard, { id }).then(
      (board) => {
        this.apply(board);
        return this.boards.get(id) ?? board;
      },
      (error: unknown) => {
        this.subscriptions.delete(id);
        throw error;
      },
    );
    this.subscriptions.set(id, subscribing);
    return subscribing;
  }

  /** The board's last document closed: unsubscribes (errors are ignored: it is gone anyway). */
  async close(requester: Requester | undefined, id: string): Promise<void> {
    if (!this.subscriptions.delete(id)) return;
    this.boards.delete(id);
    if (!requester) return;
    try {
      await requester.sendRequest(lsp.unsubscribeWhiteboard, { id });
    } catch {
      // The server forgot it already (restart, board gone).
    }
  }

  /**
   * After a server restart: subscribes again to every board still shown, taking the new
   * server's versions as they are. Boards that no longer exist keep their last content.
   */
  async resubscribe(requester: Requester): Promise<void> {
    for (const id of [...this.subscriptions.keys()]) {
      try {
        const board = await requester.sendRequest(lsp.subscribeWhiteboard, { id });
        this.subscriptions.set(id, Promise.resolve(board));
        this.boards.delete(id);
        this.apply(board);
      } catch {
        // An agent board of an earlier run: leave the document as it was.
      }
    }
  }

  get(id: string): lsp.Whiteboard | undefined {
    return this.boards.get(id);
  }

  content(id: string): string | undefined {
    return this.boards.get(id)?.content;
  }

  isSubscribed(id: string): boolean {
    return this.subscriptions.has(id);
  }

  subscribed(): string[] {
    return [...this.subscriptions.keys()];
  }

  dispose(): void {
    this.changed.dispose();
  }
}
