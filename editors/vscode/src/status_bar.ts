// The recovery status-bar item: renders StatusModel, ticks once a second while a retry
// countdown runs, and reveals the task it talks about when clicked.

import * as vscode from 'vscode';
import type { StatusModel } from './model/status';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('conclave.status', vscode.StatusBarAlignment.Left, 10);
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped: string | undefined;
  private readonly subscription: { dispose(): void };

  constructor(private readonly model: StatusModel) {
    this.subscription = model.onDidChange(() => this.render());
    this.item.name = 'Conclave';
    this.item.show();
    this.render();
  }

  /** Shows a non-task state (server stopped, binary missing) until `render` is called again. */
  showStopped(text: string, tooltip: string): void {
    this.stopped = text;
    this.clearTimer();
    this.item.text = `$(circle-slash) ${text}`;
    this.item.tooltip = tooltip;
    this.item.command = 'conclave.restartServer';
    this.item.backgroundColor = undefined;
  }

  render(): void {
    this.stopped = undefined;
    this.clearTimer();
    const view = this.model.render(Date.now());
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.taskId
      ? { command: 'conclave.revealTask', title: 'Reveal task', arguments: [view.taskId] }
      : { command: 'workbench.view.extension.conclave', title: 'Show Conclave' };
    this.item.backgroundColor =
      view.kind === 'failed'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.kind === 'escalated'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    if (view.ticking) this.timer = setTimeout(() => this.stopped === undefined && this.render(), 1000);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.subscription.dispose();
    this.clearTimer();
    this.item.dispose();
  }
}
