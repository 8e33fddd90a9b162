// Export destinations: S3-compatible buckets checked by a real test write, with credentials sealed at rest.
import { AppError } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { exportWorkspace } from './access.js';
import {
  DestinationConfig,
  type DestinationConfigValue,
  DestinationCreate,
  type DestinationCreateInput,
  DestinationCredentials,
  type DestinationCredentialsValue,
  DestinationUpdate,
  type DestinationUpdateInput,
} from './exports.schemas.js';
import * as store from './exports.store.js';
import { validateDestinationAccess } from './s3.js';

export type { ExportDestination } from './exports.store.js';

/**
 * Creates a destination after writing (and deleting, when allowed) a test object under `tmp/` in its
 * bucket. Credentials may be omitted on self-hosted installations only (the AWS SDK's default chain).
 * Throws BAD_REQUEST "Failed to validate S3 destination: <reason>", VALIDATION_FAILED, FORBIDDEN.
 */
export async function createDestination(ctx: ServiceContext, input: DestinationCreateInput): Promise<store.ExportDestination> {
  const { workspaceId, selfHosted } = await exportWorkspace(ctx, 'workspaces:write');
  const data = parseInput(DestinationCreate, input);
  if (!data.credentials && !selfHosted) throw AppError.badRequest('Credentials are required for this installation.');
  await validateDestinationAccess(data.config, data.credentials ?? null);
  return store.insertDestination(ctx.db, {
    workspaceId,
    destinationType: data.destination_type,
    displayName: data.display_name,
    config: data.config,
    credentials: data.credentials ? ctx.secrets.encrypt(JSON.stringify(data.credentials)) : null,
  });
}

/** The destinations of the viewer's workspace, newest first; `selection` folds relations (GraphQL) into the read. */
export async function listDestinations(
  ctx: ServiceContext,
  selection: Prisma.ExportDestinationFindManyArgs = {},
): Promise<store.ExportDestination[]> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:read');
  return store.listDestinations(ctx.db, workspaceId, selection);
}

/** One destination of the viewer's workspace; NOT_FOUND otherwise (never another workspace's row). */
export async function getDestination(ctx: ServiceContext, id: string): Promise<store.ExportDestination> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:read');
  return findOwnDestination(ctx, workspaceId, id);
}

/** Rotates a destination's credentials after validating them with a test write. Throws as createDestination. */
export async function updateDestination(ctx: ServiceContext, id: string, input: DestinationUpdateInput): Promise<store.ExportDestination> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:write');
  const data = parseInput(DestinationUpdate, input);
  const destination = await findOwnDestination(ctx, workspaceId, id);
  await validateDestinationAccess(destinationConfig(destination), data.credentials);
  return store.updateDestination(ctx.db, destination.id, {
    displayName: data.display_name,
    credentials: ctx.secrets.encrypt(JSON.stringify(data.credentials)),
  });
}

export async function findOwnDestination(ctx: ServiceContext, workspaceId: string, id: string) {
  const destination = isUuid(id) ? await store.findDestination(ctx.db, workspaceId, id) : null;
  if (!destination) throw AppError.notFound(`Destination ${id} not found.`);
  return destination;
}

/** A stored destination's config, as validated on create. */
export const destinationConfig = (destination: store.ExportDestination): DestinationConfigValue => DestinationConfig.parse(destination.config);

/** A stored destination's credentials, unsealed (null: the SDK's default chain). */
export function destinationCredentials(deps: Pick<Deps, 'secrets'>, destination: store.ExportDestination): DestinationCredentialsValue | null {
  return destination.credentials ? DestinationCredentials.parse(JSON.parse(deps.secrets.decrypt(destination.credentials))) : null;
}
