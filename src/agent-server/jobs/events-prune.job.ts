// Large event payloads are only needed while subscribers read them; an hour is far longer than that.
import type { Deps } from '../../context.js';

export async function pruneEventPayloads(deps: Deps): Promise<{ deleted: number }> {
  const deleted = await deps.db.prisma.eventPayload.deleteMany({ where: { createdAt: { lt: new Date(Date.now() - 3600_000) } } });
  return { deleted: deleted.count };
}
