// Tokens and cost as people read them: "12.3k tokens · $0.0042". The Neovim plugin
// formats the same way (editors/nvim/lua/conclave/usage.lua). Imports nothing from 'vscode'.

import type { TokenUsage } from '../lsp_ext';

/** 812, 1.2k, 12.3k, 123k, 1.5M: three significant digits at most, no trailing ".0". */
export function formatTokens(tokens: number): string {
  const n = Math.max(0, Math.round(tokens));
  if (n < 1000) return String(n);
  const [value, unit] = n < 999_500 ? [n / 1000, 'k'] : [n / 1_000_000, 'M'];
  const text = value < 100 ? value.toFixed(1) : value.toFixed(0);
  return `${text.replace(/\.0$/, '')}${unit}`;
}

/** $0.0042 under a dollar (a task's cost is often a fraction of a cent), $12.34 above. */
export function formatCost(usd: number): string {
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function totalTokens(usage: TokenUsage): number {
  return usage.inputTokens + usage.outputTokens;
}

/** "12.3k tokens · $0.0042", the cost only when the model has a price. */
export function usageLabel(usage: TokenUsage): string {
  const tokens = `${formatTokens(totalTokens(usage))} tokens`;
  return usage.costUsd === null || usage.costUsd === undefined ? tokens : `${tokens} · ${formatCost(usage.costUsd)}`;
}

/** The whole figure, for tooltips: exact counts, calls, estimates, and why no cost. */
export function usageDetail(usage: TokenUsage): string {
  const calls = `${usage.calls} call${usage.calls === 1 ? '' : 's'}`;
  const estimated = usage.estimatedCalls ? ` (${usage.estimatedCalls} estimated: the provider reported no usage)` : '';
  const cost =
    usage.costUsd === null || usage.costUsd === undefined
      ? 'cost unknown: the model has no [pricing] entry in conclave.toml'
      : formatCost(usage.costUsd);
  return `${grouped(usage.inputTokens)} in · ${grouped(usage.outputTokens)} out · ${calls}${estimated} · ${cost}`;
}

/** The sum of several usages; a cost only where one is known, as the server adds them. */
export function addUsage(usages: readonly TokenUsage[]): TokenUsage | undefined {
  if (usages.length === 0) return undefined;
  const sum: TokenUsage = { inputTokens: 0, outputTokens: 0, calls: 0, estimatedCalls: 0, costUsd: null };
  for (const usage of usages) {
    sum.inputTokens += usage.inputTokens;
    sum.outputTokens += usage.outputTokens;
    sum.calls += usage.calls;
    sum.estimatedCalls = (sum.estimatedCalls ?? 0) + (usage.estimatedCalls ?? 0);
    if (usage.costUsd !== null && usage.costUsd !== undefined) sum.costUsd = (sum.costUsd ?? 0) + usage.costUsd;
  }
  return sum;
}

function grouped(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
