// Large event payloads are only needed while subscribers read them; an hour is far longer than that.
import type { Deps } from '../../context.js';

export async function pruneEventPayloads(deps: Deps): Promise<{ deleted: number }> {
  return { deleted: await deps.events.prunePayloads() };
}
