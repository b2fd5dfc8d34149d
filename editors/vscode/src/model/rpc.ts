// What the models need from a connection: both vscode-languageclient's LanguageClient and
// vscode-jsonrpc's MessageConnection fit, so the extension and the tests share one code path.

import type { Disposable, NotificationType, RequestType } from 'vscode-jsonrpc';

export interface Requester {
  sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P): Promise<R>;
}

export interface NotificationSource {
  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable;
}
