// Creating the language client: the experimental-capabilities feature, the applyEdit
// middleware that saves what a Conclave edit touched, and the server options.

import * as vscode from 'vscode';
import {
  CancellationTokenSource,
  type ClientCapabilities,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  ResponseError,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import type { ClientConclaveCapabilities, InitializationOptions } from './lsp_ext';
import { editedUris, type WorkspaceEditLike } from './model/edits';

/** Announces `experimental.conclave = { approvals, whiteboards, recoveryStatus }`. */
export class ConclaveCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const conclave: ClientConclaveCapabilities = { approvals: true, whiteboards: true, recoveryStatus: true };
    capabilities.experimental = { ...((capabilities.experimental as object | undefined) ?? {}), conclave };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

/** Saves the documents an applied edit touched, so buffer and disk agree before we answer. */
export async function saveEditedDocuments(edit: WorkspaceEditLike): Promise<void> {
  for (const uri of editedUris(edit)) {
    const target = vscode.Uri.parse(uri);
    const document =
      vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === target.toString()) ??
      (await vscode.workspace.openTextDocument(target));
    if (document.isDirty && !(await document.save())) {
      throw new Error(`could not save ${target.fsPath}`);
    }
  }
}

export function createClient(
  serverPath: string,
  workspaceRoot: string,
  initializationOptions: () => InitializationOptions,
  outputChannel: vscode.LogOutputChannel,
): LanguageClient {
  const serverOptions: ServerOptions = {
    command: serverPath,
    args: ['serve', '--stdio'],
    options: { cwd: workspaceRoot },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    diagnosticCollectionName: 'conclave',
    outputChannel,
    initializationOptions,
    middleware: {
      workspace: {
        handleApplyEdit: async (params, next) => {
          const result = await next(params, new CancellationTokenSource().token);
          if (result instanceof ResponseError || !result.applied) return result;
          try {
            await saveEditedDocuments(params.edit as WorkspaceEditLike);
          } catch (error) {
            outputChannel.warn(`Conclave: applied an edit but ${String(error)}; the server writes the file itself`);
          }
          return result;
        },
      },
    },
  };
  const client = new LanguageClient('conclave', 'Conclave', serverOptions, clientOptions);
  client.registerFeature(new ConclaveCapabilitiesFeature());
  return client;
}
