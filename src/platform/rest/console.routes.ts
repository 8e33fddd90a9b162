// The web console (console/, built into console/dist by `postinstall`): its page at `/` and its
// hashed assets under /console/assets/. A page for people, not an API operation, so it is mounted
// beside GraphiQL in app.ts rather than in the REST router and its OpenAPI document.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Response, Router } from 'express';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'console', 'dist');

// Same origin only, no inline script; inline styles because the chart library positions with them.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

export function consoleRouter(dist = DIST): Router {
  const router = Router();
  // File names carry a hash of their content: a new build is new URLs, so a year-long cache is safe.
  router.use('/console/assets', express.static(join(dist, 'assets'), { immutable: true, maxAge: '365d', index: false, redirect: false }));
  let page: string | undefined;
  router.get('/', (_req, res) => {
    try {
      page ??= readFileSync(join(dist, 'index.html'), 'utf8');
    } catch {
      res.status(503).type('text/plain').send('The console is not built: run `npm run console:build` (npm install does it).\n');
      return;
    }
    // The page names the current assets: always revalidated, so a rebuild is seen at once.
    res
      .set({ 'Cache-Control': 'no-cache', 'Content-Security-Policy': CONTENT_SECURITY_POLICY, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' })
      .type('html')
      .send(page);
  });
  // LangSmith's web links, as the langsmith SDK prints them on this platform's origin (evaluate()'s
  // "View results at", getRunUrl, getProjectUrl, getDatasetUrl; the SDK derives that origin from an
  // endpoint ending in /api/v1, or takes `webUrl`): each opens the console page showing the same thing.
  // The `o` segment is LangSmith's tenant, the workspace here: the console switches to it.
  const consoleAt = (res: Response, workspaceId: string, ...path: string[]) =>
    res.redirect(302, `/#/${path.map(encodeURIComponent).join('/')}?workspace=${encodeURIComponent(workspaceId)}`);
  router.get('/o/:workspaceId/projects/p/:projectId/r/:runId', (req, res) => consoleAt(res, req.params.workspaceId, 'runs', req.params.runId));
  router.get('/o/:workspaceId/projects/p/:projectId', (req, res) => consoleAt(res, req.params.workspaceId, 'projects', req.params.projectId));
  router.get('/o/:workspaceId/datasets/:datasetId{/compare}', (req, res) => consoleAt(res, req.params.workspaceId, 'datasets', req.params.datasetId));
  return router;
}
