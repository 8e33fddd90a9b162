// How numbers and times read on screen.

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const date = new Date(iso);
  return date.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function formatNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : value.toLocaleString();
}

export function formatCost(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return `$${value < 0.01 ? value.toPrecision(2) : value.toFixed(4)}`;
}

export function formatPercent(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? '–' : `${(rate * 100).toFixed(rate > 0 && rate < 0.01 ? 2 : 1)} %`;
}
