// Whiteboard contents as a pure store: fed by conclave/subscribeWhiteboard results and
// conclave/whiteboardChanged notifications; versions only go forward. Tracks which boards
// are open so the glue knows when to unsubscribe. Imports nothing from 'vscode'.

import type { Whiteboard } from '../lsp_ext';
import { Emitter } from './event';

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
  private readonly boards = new Map<string, Whiteboard>();
  private readonly openCounts = new Map<string, number>();
  private readonly changed = new Emitter<string>();
  /** Fires with the board id whenever its content changes. */
  readonly onDidChange = this.changed.event;

  /** Applies a board (subscribe/read result or change); returns whether it was newer. */
  apply(board: Whiteboard): boolean {
    const known = this.boards.get(board.id);
    if (known && known.version >= board.version) return false;
    this.boards.set(board.id, board);
    this.changed.fire(board.id);
    return true;
  }

  get(id: string): Whiteboard | undefined {
    return this.boards.get(id);
  }

  content(id: string): string | undefined {
    return this.boards.get(id)?.content;
  }

  /** A document for the board was opened; true when it is the first (subscribe now). */
  opened(id: string): boolean {
    const count = (this.openCounts.get(id) ?? 0) + 1;
    this.openCounts.set(id, count);
    return count === 1;
  }

  /** A document for the board was closed; true when it was the last (unsubscribe now). */
  closed(id: string): boolean {
    const count = this.openCounts.get(id) ?? 0;
    if (count <= 1) {
      this.openCounts.delete(id);
      this.boards.delete(id);
      return count === 1;
    }
    this.openCounts.set(id, count - 1);
    return false;
  }

  isSubscribed(id: string): boolean {
    return this.openCounts.has(id);
  }

  subscribed(): string[] {
    return [...this.openCounts.keys()];
  }

  clear(): void {
    this.boards.clear();
    this.openCounts.clear();
  }

  dispose(): void {
    this.changed.dispose();
  }
}
