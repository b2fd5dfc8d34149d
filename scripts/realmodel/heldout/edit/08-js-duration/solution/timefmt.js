// Formatting of durations (in whole seconds) for the status line.

function pad2(n) {
  return String(n).padStart(2, '0');
}

// 3725 -> '01:02:05'
function clock(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${pad2(h)}:${pad2(m)}:${pad2(s)}`;
}

// 3725 -> '1h 2m 5s', 3600 -> '1h', 0 -> '0s'
function humanDuration(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const parts = [];
  if (h) parts.push(`${h}h`);
  if (m) parts.push(`${m}m`);
  if (s) parts.push(`${s}s`);
  return parts.length ? parts.join(' ') : '0s';
}

module.exports = { pad2, clock, humanDuration };
