// The schema: imports each type file (which registers itself on the builder) and builds.
import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.js';
import './tenancy/organization.js';
import './tenancy/workspace.js';
import './tenancy/user.js';
import './tenancy/api-key.js';
import './tenancy/viewer.js';
import './system/ping.js';
import './traces/tracing-project.js';
import './traces/trace-run.js';
import './traces/feedback.js';
import './traces/dataset.js';
import './usage/usage.js';
import './agent-server/assistant.js';
import './agent-server/thread.js';
import './agent-server/run.js';
import './agent-server/cron.js';
import './agent-server/store-item.js';
import './exports/bulk-export.js';
import './auth-providers/oauth-provider.js';
import './integrations/integration.js';
import './listeners/listener.js';
import './deployments/deployment.js';

export const schema = builder.toSchema();

/** The SDL committed as schema.graphql; a test fails when it drifts from the code. */
export const printedSchema = (): string => `${printSchema(lexicographicSortSchema(schema))}\n`;
