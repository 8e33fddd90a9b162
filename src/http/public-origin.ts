// Where this server is reached, for links it hands out (feedback URLs, a run's console page, UI bundles).
import type { Request } from 'express';

/** PUBLIC_URL when the installation sets it, else the origin the client used to reach this request. */
export const publicOrigin = (req: Request, publicUrl: string | undefined): string => publicUrl ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`;
