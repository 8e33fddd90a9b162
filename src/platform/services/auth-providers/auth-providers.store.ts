// SQL of OAuth providers: rows of one organization, addressed by (organization, provider_id).
import type { Database } from '../../../db.js';
import type { OAuthProvider, Prisma } from '../../../generated/prisma/client.js';
import { newId } from '../../../ids.js';

export type { OAuthProvider };

export function insertProvider(db: Database, data: Omit<Prisma.OAuthProviderUncheckedCreateInput, 'id'>) {
  return db.prisma.oAuthProvider.create({ data: { id: newId(), ...data } });
}

export function findProvider(db: Database, organizationId: string, providerId: string, selection: Prisma.OAuthProviderFindFirstArgs = {}) {
  return db.prisma.oAuthProvider.findFirst({ ...selection, where: { organizationId, providerId } });
}

export function listProviders(db: Database, organizationId: string, selection: Prisma.OAuthProviderFindManyArgs = {}) {
  return db.prisma.oAuthProvider.findMany({ ...selection, where: { organizationId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

export function updateProvider(db: Database, id: string, data: Prisma.OAuthProviderUpdateInput) {
  return db.prisma.oAuthProvider.update({ where: { id }, data });
}

export function deleteProvider(db: Database, id: string) {
  return db.prisma.oAuthProvider.delete({ where: { id } });
}
