// SQL of git host integrations: rows of one workspace.
import type { Database } from '../../../db.js';
import type { Integration, Prisma } from '../../../generated/prisma/client.js';
import { newId } from '../../../ids.js';

export type { Integration };

export function insertIntegration(db: Database, data: Omit<Prisma.IntegrationUncheckedCreateInput, 'id'>) {
  return db.prisma.integration.create({ data: { id: newId(), ...data } });
}

/** One integration by ID, within `workspaceId` unless null (the platform's own callers). */
export function findIntegration(db: Database, workspaceId: string | null, id: string, selection: Prisma.IntegrationFindFirstArgs = {}) {
  return db.prisma.integration.findFirst({ ...selection, where: { id, ...(workspaceId ? { workspaceId } : {}) } });
}

export function listIntegrations(db: Database, workspaceId: string, selection: Prisma.IntegrationFindManyArgs = {}) {
  return db.prisma.integration.findMany({ ...selection, where: { workspaceId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}

export function deleteIntegration(db: Database, id: string) {
  return db.prisma.integration.delete({ where: { id } });
}
