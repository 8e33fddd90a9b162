// How a deployed agent server reaches the platform's ingest API from a network of its own, where the
// platform's address is not reachable (platform/launcher/sandbox-network.ts): each connection is
// opened by its launcher, outside, and handed over the child's IPC channel as a connected socket. The
// `langsmith` client sends its traces over them (fetchOverPlatformConnections) to the platform's URL
// as before; TLS, when that URL is https, is done here, end to end.
import { type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Agent, fetch as fetchThrough } from 'undici';

/** Opens a connection to the platform's address (the launcher's, over IPC). */
export type PlatformConnector = () => Promise<Socket>;

let connector: PlatformConnector | undefined;

/** Makes `fetchOverPlatformConnections` use `connect` for every connection (agent-server/main.ts, once). */
export function usePlatformConnections(connect: PlatformConnector): void {
  connector = connect;
}

/**
 * A `fetch` for requests to `baseUrl` over connections the launcher handed over, or undefined when
 * this process was given none (its network reaches the platform: `fetch` itself serves).
 */
export function fetchOverPlatformConnections(baseUrl: string): typeof fetch | undefined {
  const connect = connector;
  if (!connect) return undefined;
  const { protocol, hostname } = new URL(baseUrl);
  const dispatcher = new Agent({
    connect: (_options, callback) => {
      connect().then(
        (socket) => {
          if (protocol !== 'https:') return callback(null, socket);
          const secured = connectTls({ socket, servername: hostname, ALPNProtocols: ['http/1.1'] });
          secured.once('secureConnect', () => callback(null, secured));
          secured.once('error', (error) => callback(error, null));
        },
        (error: Error) => callback(error, null),
      );
    },
  });
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) => fetchThrough(input as string, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}
