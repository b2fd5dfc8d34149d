// Marks files a subtask is generating right now (its status is running or recovering).

import * as vscode from 'vscode';
import type { TasksModel } from './model/tasks';

export class GeneratingFilesDecorations implements vscode.FileDecorationProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri[]>();
  readonly onDidChangeFileDecorations = this.changed.event;
  private current = new Set<string>();
  private readonly subscription: { dispose(): void };

  constructor(private readonly model: TasksModel) {
    this.subscription = model.onDidChange(() => this.refresh());
  }

  private refresh(): void {
    const next = new Set([...this.model.filesBeingGenerated()].map((uri) => vscode.Uri.parse(uri).toString()));
    const touched = new Set<string>();
    for (const uri of next) if (!this.current.has(uri)) touched.add(uri);
    for (const uri of this.current) if (!next.has(uri)) touched.add(uri);
    this.current = next;
    if (touched.size > 0) this.changed.fire([...touched].map((uri) => vscode.Uri.parse(uri)));
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    if (!this.current.has(uri.toString())) return undefined;
    const decoration = new vscode.FileDecoration(
      '⟳',
      'Conclave is generating this file',
      new vscode.ThemeColor('charts.yellow'),
    );
    decoration.propagate = false;
    return decoration;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
