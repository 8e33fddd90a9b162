// GET /openapi.json and GET /docs for a surface: the document is built once per router from the
// operations list; /docs is Swagger UI from the swagger-ui-dist package's own files, served by this
// server (no CDN: it works offline and behind a firewall). Both are public: the document is the same
// for every deployment and tells nothing about any tenant.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Request, type RequestHandler, Router } from 'express';
import { enteredFor } from '../entered-for.js';
import { openApiDocument, type Operation, type Surface } from './document.js';

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
// Only these files of the package are served.
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css',
  'swagger-ui-bundle.js': 'text/javascript',
  'swagger-ui-standalone-preset.js': 'text/javascript',
  'favicon-32x32.png': 'image/png',
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, base: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)}</title>
  <link rel="icon" type="image/png" href="${base}/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="${base}/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="${base}/docs/assets/swagger-ui-bundle.js"></script>
  <script src="${base}/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script src="${base}/docs/init.js"></script>
</body>
</html>`;
}

// The mount path the client reached (`''` at the root, `/deployments/<id>`), for absolute asset urls.
const mountPath = (req: Request) => req.baseUrl.replace(/\/$/, '');

/** The operations of this router, which every surface that mounts it lists. */
export const referenceOperations: Operation[] = [
  { method: 'get', path: '/openapi.json', tag: 'System', summary: 'This OpenAPI document (public)' },
  { method: 'get', path: '/docs', tag: 'System', summary: 'Interactive API reference (public)', response: { kind: 'html' } },
  { method: 'get', path: '/docs/init.js', tag: 'System', summary: 'Script of the reference page', response: { kind: 'text' } },
  { method: 'get', path: '/docs/assets/:file', tag: 'System', summary: "The reference page's bundled assets (swagger-ui-dist)", response: { kind: 'text' } },
];

/** /openapi.json, /docs and its assets for `surface`, at wherever the router is mounted. */
export function apiReferenceRouter(surface: Surface): RequestHandler {
  const router = Router();
  // Built once, when first asked for (not on every agent server's start, ~60 ms): only `servers`
  // differs between mounts (/, /deployments/<id>).
  let document: ReturnType<typeof openApiDocument> | undefined;
  router.get('/openapi.json', (req, res) => {
    document ??= openApiDocument(surface, '/');
    res.json({ ...document, servers: [{ url: mountPath(req) || '/' }] });
  });
  router.get('/docs', (req, res) => {
    res.type('html').send(page(surface.title, mountPath(req)));
  });
  router.get('/docs/init.js', (req, res) => {
    const url = JSON.stringify(`${mountPath(req)}/openapi.json`);
    res.type('text/javascript').send(
      // Sections collapsed, their names the table of contents: Swagger UI stopped rendering the platform's
      // ~170 operations listed all at once (the page stayed blank after the second section).
      `window.ui = SwaggerUIBundle({ url: ${url}, dom_id: '#reference', deepLinking: true, docExpansion: 'none', presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });\n`,
    );
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const type = ASSETS[req.params.file];
    if (!type) return next();
    res.type(type).set('Cache-Control', 'public, max-age=86400').sendFile(join(SWAGGER_UI_DIR, req.params.file));
  });
  return enteredFor(/^\/(openapi\.json|docs)(\/|$)/i, router);
}
