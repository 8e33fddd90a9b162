// What crosses between an agent server's API and the process its graphs run in (the platform's
// gateway speaks ../../gateway-protocol.ts instead).
//
// Graph requests: the reads and writes that need the deployment's graphs, asked by the agent-server
// API of its runtime (a worker thread, or the same process) over HTTP (agent-server/runtime/runtime-server.ts),
// found through the runtimes table of the agent server's database. Chosen over the event
// bus because a reply (a thread's history with subgraph states) can be far larger than a NOTIFY
// payload, and HTTP gives each request a deadline and an error of its own when the runtime is gone.
// Requests carry a MAC made with the process's secret key.
import type { ErrorCode, ValidationIssue } from '../../../errors.js';

import type { Checkpoint, ThreadState } from '../../../contracts/agent-server-api.js';

export type { Checkpoint, ThreadState };

type Json = Record<string, unknown>;

/** A project's `http.app` as the agent server serves it: fetch-style; Hono's also says what happens when none of its routes matches. */
export type CustomApp = {
  fetch(request: Request): Response | Promise<Response>;
  notFound?(handler: (context?: unknown) => Response | Promise<Response>): unknown;
};

export type UiFile = { basename: string; contents: Uint8Array };

/** A project's `ui` components, bundled: the files the agent server serves per graph. */
export type UiBundles = {
  /** The bundle's files of a graph (its `.js` entry and `.css`), once built. */
  files(graphId: string): UiFile[] | undefined;
};

type CheckpointSelector = Record<string, unknown>;

export type GraphRequest =
  // `config`: the thread's config, which a factory graph is built with (its shape may depend on it).
  | { kind: 'thread-state'; threadId: string; graphId: string; config: Json; subgraphs: boolean; checkpoint: CheckpointSelector | null }
  | {
      kind: 'thread-history';
      threadId: string;
      graphId: string;
      config: Json;
      checkpoint: CheckpointSelector | null;
      limit: number;
      before: unknown;
      metadata: Json | null;
    }
  | { kind: 'update-thread-state'; threadId: string; graphId: string; config: Json; checkpoint: CheckpointSelector; values: unknown; asNode: string | undefined }
  | { kind: 'seed-thread-state'; threadId: string; graphId: string; supersteps: { updates: { values?: unknown; as_node?: string }[] }[] }
  | { kind: 'graph-drawing'; graphId: string; config: Json; xray: boolean | number | undefined }
  | { kind: 'graph-schemas'; graphId: string; config: Json }
  | { kind: 'subgraph-schemas'; graphId: string; config: Json; namespace: string | undefined; recurse: boolean | undefined }
  // The store's embedding function (the graph config's `store.index.embed`): documents, or one query.
  | { kind: 'store-embed'; texts: string[]; query: boolean }
  // The runtime's own figures for /metrics (its trace batcher's counts; null when it traces nothing).
  | { kind: 'runtime-metrics' };

/** The runtime's answer: the request's result, or the AppError it raised. */
export type GraphReply = { result: unknown } | { error: { code: ErrorCode; message: string; details?: ValidationIssue[] | Json } };

export const RUNTIME_REQUEST_PATH = '/graph-requests';
export const RUNTIME_SIGNATURE_HEADER = 'x-runtime-signature';

/** What a request's MAC covers: the runtime it is meant for and the exact body. */
export const signedMessage = (runtimeId: string, body: string) => `${runtimeId}\n${body}`;
