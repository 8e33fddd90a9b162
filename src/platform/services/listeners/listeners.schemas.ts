// Input schemas of listeners (control plane, listeners v2) and the control plane's list paging.
import { z } from 'zod';

/** Compute targets a listener can stand for. */
const COMPUTE_TYPES = ['k8s'] as const;

/** Free-form settings of the compute target (e.g. `k8s_namespaces`), an object within the body limits. */
const computeConfig = z.record(z.string().max(200), z.unknown());

export const ListenerCreate = z.object({
  compute_type: z.enum(COMPUTE_TYPES).default('k8s'),
  compute_id: z.string().trim().min(1).max(255),
  compute_config: computeConfig.nullish(),
});
export type ListenerCreateInput = z.input<typeof ListenerCreate>;

/** PATCH: only compute_config changes; compute_type and compute_id identify the listener (400 when sent). */
export const ListenerUpdate = z.object({
  compute_type: z.unknown().optional(),
  compute_id: z.unknown().optional(),
  compute_config: computeConfig.nullish(),
});
export type ListenerUpdateInput = z.input<typeof ListenerUpdate>;

/** `limit` (1..100, default 20) and `offset` (default 0) of the control plane's `{resources, offset}` lists. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});
export type PageQueryInput = z.input<typeof PageQuery>;
