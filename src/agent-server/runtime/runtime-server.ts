// The runtime's end of the graph-request channel (agent-server/services/served-deployment/runtime-protocol.ts): a small
// HTTP server that answers the agent-server API's graph requests for the deployment it runs. Only
// requests signed with this process's secret key for this runtime are answered.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAppError } from '../../errors.js';
import { type GraphReply, type GraphRequest, RUNTIME_REQUEST_PATH, RUNTIME_SIGNATURE_HEADER, signedMessage } from '../services/served-deployment/runtime-protocol.js';
import { answerGraphRequest } from './graph-reads.js';
import { withEncryptionContext } from '../services/encryption/at-rest.js';
import type { RuntimeContext } from './runtime-context.js';
import { advertisedHost } from '../../contracts/launcher-protocol.js';

export type RuntimeServer = { url: string; stop(): Promise<void> };

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Listens on `host` (a free port) and answers the graph requests of runtime `runtimeId`. */
export async function startRuntimeServer(ctx: RuntimeContext, runtimeId: string, host: string): Promise<RuntimeServer> {
  const server = createServer((req, res) => {
    const reply = (status: number, body: GraphReply | { detail: string }) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = req.url ?? '/';
    if (req.method !== 'POST' || url !== RUNTIME_REQUEST_PATH) return reply(404, { detail: 'Not Found' });
    void readBody(req).then(async (body) => {
      const signature = req.headers[RUNTIME_SIGNATURE_HEADER];
      if (typeof signature !== 'string' || !ctx.secrets.verify(signedMessage(runtimeId, body), signature)) return reply(401, { detail: 'Bad signature' });
      try {
        const request = JSON.parse(body) as GraphRequest & { encryptionContext?: Record<string, unknown> };
        reply(200, { result: await withEncryptionContext(request.encryptionContext, () => answerGraphRequest(ctx, request)) });
      } catch (error) {
        if (isAppError(error)) return reply(200, { error: { code: error.code, message: error.message, details: error.details } });
        ctx.logger.error({ err: error }, 'a graph request failed');
        reply(500, { detail: 'Internal Server Error' });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = advertisedHost(host, ctx.config.publicUrl);
  return {
    url: `http://${shownHost}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
