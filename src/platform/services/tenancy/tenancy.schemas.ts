// Input schemas of the tenancy area, shared by GraphQL, REST and the admin CLI.
import { z } from 'zod';

const name = z.string().trim().min(1, 'must not be empty').max(200);

export const OrganizationCreate = z.object({
  name,
  planTier: z.enum(['free', 'plus', 'enterprise']).default('enterprise'),
  selfHosted: z.boolean().default(true),
});

export const WorkspaceCreate = z.object({
  name,
  /** Required for system callers; an API key always acts in its own organization. */
  organizationId: z.uuid().optional(),
});

export const UserCreate = z.object({
  email: z.email().transform((value) => value.toLowerCase()),
  name: z.string().trim().max(200).optional(),
  organizationId: z.uuid(),
  organizationRole: z.enum(['ORGANIZATION_ADMIN', 'ORGANIZATION_MEMBER', 'ORGANIZATION_GUEST']).default('ORGANIZATION_MEMBER'),
  workspaces: z
    .array(z.object({ workspaceId: z.uuid(), role: z.enum(['WORKSPACE_ADMIN', 'WORKSPACE_EDITOR', 'WORKSPACE_VIEWER']) }))
    .default([]),
});

export const ApiKeyCreate = z.object({
  description: z.string().trim().max(500).default(''),
  /** Bind the key to one workspace; omitted: the key works in every workspace its user can reach. */
  workspaceId: z.uuid().nullish(),
  /** System callers create keys for a named user; API keys create keys for their own user. */
  userId: z.uuid().optional(),
  organizationId: z.uuid().optional(),
});

export type OrganizationCreateInput = z.input<typeof OrganizationCreate>;
export type WorkspaceCreateInput = z.input<typeof WorkspaceCreate>;
export type UserCreateInput = z.input<typeof UserCreate>;
export type ApiKeyCreateInput = z.input<typeof ApiKeyCreate>;
