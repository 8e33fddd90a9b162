// Folds the trace deltas ingestion appended into the usage rollups. Reads are exact without it (they
// add unfolded deltas); folding keeps that tail, and so every read, small.
import type { Deps } from '../../context.js';
import { foldUsageDeltas } from '../services/usage/usage.service.js';

export async function foldUsage(deps: Deps): Promise<{ folded: number }> {
  return foldUsageDeltas(deps);
}
