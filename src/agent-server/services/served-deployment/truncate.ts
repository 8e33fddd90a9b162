// Dev reset for test harnesses (`serve --dev`, POST /internal/truncate): clears a deployment's state
// but keeps its system assistants, so a suite can start from a clean server without restarting it.
import { z } from 'zod';
import { parseInput } from '../../../validate.js';
import { ensureSystemAssistants } from '../assistants/assistants.service.js';
import { storeSchema } from '../../../database/store-schema.js';
import { deleteDeploymentRuns } from '../runs/runs.store.js';
import { deleteThreadCheckpoints } from '../threads/checkpoints.store.js';
import type { AgentServerContext } from './deployment-scope.js';

const TruncateRequest = z.object({
  runs: z.boolean().optional(),
  threads: z.boolean().optional(),
  assistants: z.boolean().optional(),
  store: z.boolean().optional(),
  checkpoint: z.boolean().optional(),
});

/** Deletes the chosen kinds of rows of this deployment. */
export async function truncateDeployment(ctx: AgentServerContext, input: unknown): Promise<void> {
  const flags = parseInput(TruncateRequest, input, 'body');
  const { deploymentId } = ctx.deployment;
  const pool = ctx.db.pool;
  if (flags.runs || flags.threads) {
    await deleteDeploymentRuns(ctx.db, deploymentId);
  }
  if (flags.threads || flags.checkpoint) {
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM agent_threads WHERE deployment_id = $1', [deploymentId]);
    await deleteThreadCheckpoints(pool, rows.map((row) => row.id));
  }
  if (flags.threads) await pool.query('DELETE FROM agent_threads WHERE deployment_id = $1', [deploymentId]);
  if (flags.assistants) {
    await pool.query(`DELETE FROM agent_assistants WHERE deployment_id = $1 AND NOT metadata @> '{"created_by":"system"}'::jsonb`, [deploymentId]);
    await ensureSystemAssistants(ctx);
  }
  if (flags.store) await pool.query(`DELETE FROM "${storeSchema(deploymentId)}".store`);
}
