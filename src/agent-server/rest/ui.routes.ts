// Generative UI, as the reference server serves it: `POST /ui/{graph_id}` answers the HTML that loads
// a component (its stylesheet and script, at this server's own URL), and the bundle's files are
// served under `/ui/{graph_id}/`. `serve` mounts this router itself; a deployed project's runtime serves
// it behind the API (runtime-server.ts), which tells it the deployment's url the links must name.
import { extname } from 'node:path';
import { type Request, Router } from 'express';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { publicOrigin } from '../../http/public-origin.js';
import type { UiBundles } from '../services/served-deployment/runtime-protocol.js';
import { parseInput } from '../../validate.js';

const UiComponentRequest = z.object({ name: z.string() });

const escapeAttribute = (text: string) => text.replace(/&/g, '&amp;').replace(/'/g, '&#39;').replace(/</g, '&lt;');

/**
 * `urlOf`: where the router is reached, when not at this server's own URL (a deployment's url, as
 * the API that forwards to the runtime was reached).
 */
export function uiRouter(bundles: UiBundles, options: { publicUrl?: string; urlOf?: (req: Request) => string | undefined }): Router {
  const router = Router();

  router.post('/ui/:graphId', (req, res) => {
    const { name } = parseInput(UiComponentRequest, req.body ?? {}, 'body');
    const graphId = req.params.graphId;
    const files = bundles.files(graphId);
    if (!files?.length) throw AppError.notFound(`UI not found for agent "${graphId}"`);
    const base = `${options.urlOf?.(req) ?? publicOrigin(req, options.publicUrl)}/ui/${encodeURIComponent(graphId)}`;
    const tags = files.filter((file) => extname(file.basename) === '.css').map((file) => `<link rel="stylesheet" href="${base}/${file.basename}" />`);
    const script = files.find((file) => extname(file.basename) === '.js');
    if (script) {
      // The bundle defines this global (named by the bundler after the graph); the SDK's
      // LoadExternalComponent fills in the shadow root id.
      const global = `__LGUI_${graphId.replace(/[^a-zA-Z0-9]/g, '_')}`;
      const onload = `${global}.render(${JSON.stringify(name)}, "{{shadowRootId}}")`;
      tags.push(`<script src="${base}/${script.basename}" onload='${escapeAttribute(onload)}'></script>`);
    }
    res.type('text/html').send(tags.join('\n'));
  });

  router.get('/ui/:graphId/:basename', (req, res) => {
    const file = bundles.files(req.params.graphId)?.find((item) => item.basename === req.params.basename);
    if (!file) throw AppError.notFound('File not found');
    res.type(extname(file.basename) || 'text/plain').send(Buffer.from(file.contents));
  });

  return router;
}
