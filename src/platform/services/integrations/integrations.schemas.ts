// Input schemas of git host integrations (control plane, integrations v1).
import { z } from 'zod';

/** A host name with an optional port (what a clone URL names), e.g. `github.com`, `git.example.com:8443`. */
const host = z
  .string()
  .trim()
  .toLowerCase()
  .max(260)
  .regex(/^(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/, 'must be a host name, optionally with a port, such as github.com');

export const IntegrationCreate = z.object({
  name: z.string().trim().min(1).max(200),
  host,
  // Tokens are single words; whitespace or control characters would break the credential header.
  access_token: z.string().min(1).max(4096).regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
});
export type IntegrationCreateInput = z.input<typeof IntegrationCreate>;
