// SQL of listeners: rows of one workspace, one per compute_id.
import type { Database } from '../../../db.js';
import type { Listener, Prisma } from '../../../generated/prisma/client.js';
import { newId } from '../../../ids.js';

export type { Listener };

export function insertListener(db: Database, data: Omit<Prisma.ListenerUncheckedCreateInput, 'id'>) {
  return db.prisma.listener.create({ data: { id: newId(), ...data } });
}

export function findListener(db: Database, workspaceId: string, id: string, selection: Prisma.ListenerFindFirstArgs = {}) {
  return db.prisma.listener.findFirst({ ...selection, where: { id, workspaceId } });
}

export function listListeners(db: Database, workspaceId: string, page: { limit: number; offset: number }, selection: Prisma.ListenerFindManyArgs = {}) {
  return db.prisma.listener.findMany({
    ...selection,
    where: { workspaceId },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: page.limit,
    skip: page.offset,
  });
}

export function updateListener(db: Database, id: string, data: Prisma.ListenerUpdateInput) {
  return db.prisma.listener.update({ where: { id }, data });
}

export function deleteListener(db: Database, id: string) {
  return db.prisma.listener.delete({ where: { id } });
}

/** The plan and hosting of the organization a workspace belongs to. */
export async function workspaceOrganization(db: Database, workspaceId: string) {
  const workspace = await db.prisma.workspace.findUnique({
    where: { id: workspaceId },
    select: { organization: { select: { planTier: true, selfHosted: true } } },
  });
  return workspace?.organization ?? null;
}
