// RFC 3339 timestamps as the server sends them (chrono: 0, 3, 6 or 9 fraction digits, "Z"),
// compared by the instant they name: plain string comparison gets "…:05Z" vs "…:05.5Z" and
// "…:05.123Z" vs "…:05.123456Z" wrong.

const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i;

/** [whole seconds in ms since the epoch, nanoseconds], or undefined when not RFC 3339. */
function parse(timestamp: string): [number, number] | undefined {
  const match = RFC3339.exec(timestamp);
  if (!match) return undefined;
  const seconds = Date.parse(`${match[1]}${match[3].toUpperCase()}`);
  if (Number.isNaN(seconds)) return undefined;
  const nanos = Number((match[2] ?? '').padEnd(9, '0').slice(0, 9));
  return [seconds, nanos];
}

/** Negative when `a` is earlier than `b`, positive when later, 0 when equal. */
export function compareTimestamps(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  return pa[0] !== pb[0] ? pa[0] - pb[0] : pa[1] - pb[1];
}

export function isEarlier(a: string, b: string): boolean {
  return compareTimestamps(a, b) < 0;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * A timestamp as a person reads it, in local time: "14:05:09" today, "2026-01-31 14:05"
 * otherwise; anything that is not RFC 3339 is returned as is.
 */
export function readableTime(timestamp: string, now: Date = new Date()): string {
  const parsed = parse(timestamp);
  if (!parsed) return timestamp;
  const at = new Date(parsed[0]);
  const sameDay =
    at.getFullYear() === now.getFullYear() && at.getMonth() === now.getMonth() && at.getDate() === now.getDate();
  const time = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  if (sameDay) return `${time}:${pad(at.getSeconds())}`;
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${time}`;
}
