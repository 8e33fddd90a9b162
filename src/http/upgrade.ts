// WebSocket endpoints beside an HTTP server's routes: each answers the upgrades it owns.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** Answers an upgrade it owns (true), or leaves it to the server's other handlers (false). */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** An endpoint's handler, and its close (ending its open sockets) at the server's stop. */
export type UpgradeEndpoint = { handle: UpgradeHandler; close(): void };
