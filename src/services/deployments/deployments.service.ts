// The deployments this process serves, by id, so GraphQL (which names deployments in its arguments)
// reaches the same scope the REST router was built with.
import { AppError } from '../../errors.js';
import type { ServiceContext } from '../context.js';
import type { AgentServerContext, DeploymentScope } from './deployment-scope.js';

const scopes = new Map<string, DeploymentScope>();

export function registerDeploymentScope(scope: DeploymentScope): () => void {
  scopes.set(scope.deploymentId, scope);
  return () => {
    if (scopes.get(scope.deploymentId) === scope) scopes.delete(scope.deploymentId);
  };
}

/**
 * The agent-server context for a deployment, if the viewer may use it: anyone on a deployment served
 * without auth (`serve`), else a key of the deployment's organization. NOT_FOUND otherwise.
 */
export function agentContext(ctx: ServiceContext, deploymentId: string): AgentServerContext {
  const scope = scopes.get(deploymentId);
  if (!scope) throw AppError.notFound('Deployment not found');
  if (scope.auth.kind === 'organization-key') {
    const allowed = ctx.viewer.kind === 'system' || (ctx.viewer.kind === 'api-key' && ctx.viewer.organizationId === scope.auth.organizationId);
    if (!allowed) throw AppError.notFound('Deployment not found');
  }
  return { ...ctx, deployment: scope };
}

/** The deployments this process serves (GraphQL lists them). */
export const servedDeploymentIds = (): string[] => [...scopes.keys()];
