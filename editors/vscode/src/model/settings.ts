// The extension's settings turned into initializationOptions, with the workspace-trust rule
// applied. Pure: the glue reads vscode.workspace.getConfiguration and passes plain values.

import type { InitializationOptions } from '../lsp_ext';

export interface RawSettings {
  llm: { provider?: string; model?: string; baseUrl?: string; apiKeyEnv?: string };
  approvals: { fileChanges?: string; commands?: string };
}

export interface ResolvedOptions {
  initializationOptions: InitializationOptions;
  /** Set when a setting was overridden for safety; the glue tells the user. */
  notice?: string;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/**
 * Builds initializationOptions from the settings: empty strings are left out so the
 * workspace's conclave.toml (and the built-in defaults) still apply. In an untrusted
 * workspace, agents must never run commands: approvals.commands is forced to "deny".
 */
export function initializationOptions(settings: RawSettings, trusted: boolean): ResolvedOptions {
  const options: InitializationOptions = {};
  const llm: NonNullable<InitializationOptions['llm']> = {};
  const provider = nonEmpty(settings.llm.provider);
  if (provider) llm.provider = provider;
  const model = nonEmpty(settings.llm.model);
  if (model) llm.model = model;
  const baseUrl = nonEmpty(settings.llm.baseUrl);
  if (baseUrl) llm.baseUrl = baseUrl;
  const apiKeyEnv = nonEmpty(settings.llm.apiKeyEnv);
  if (apiKeyEnv) llm.apiKeyEnv = apiKeyEnv;
  if (Object.keys(llm).length > 0) options.llm = llm;

  const approvals: NonNullable<InitializationOptions['approvals']> = {};
  const fileChanges = nonEmpty(settings.approvals.fileChanges);
  if (fileChanges === 'auto' || fileChanges === 'ask') approvals.fileChanges = fileChanges;
  const commands = nonEmpty(settings.approvals.commands);
  if (commands === 'ask' || commands === 'auto' || commands === 'deny') approvals.commands = commands;
  let notice: string | undefined;
  if (!trusted) {
    if (approvals.commands !== 'deny') {
      notice =
        'Conclave: this workspace is not trusted, so agents may not run commands (approvals.commands = "deny"). ' +
        'Trust the workspace (Workspaces: Manage Workspace Trust) to let them ask.';
    }
    approvals.commands = 'deny';
  }
  if (Object.keys(approvals).length > 0) options.approvals = approvals;
  return { initializationOptions: options, notice };
}
