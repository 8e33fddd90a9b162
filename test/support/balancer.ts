// A TCP load balancer for tests of several api processes: each connection goes to the next backend
// in turn, and to the one after when that one refuses (a process that stopped accepting), as a real
// balancer's retry on connect does. Backends can be swapped while it runs (a rolling replacement).
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export type Balancer = { url: string; backends: string[]; close(): Promise<void> };

export async function startBalancer(backends: string[]): Promise<Balancer> {
  const state = { backends: [...backends], turn: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.pause();
    const attempt = (tries: number) => {
      if (tries >= state.backends.length) return client.destroy();
      const backend = new URL(state.backends[state.turn++ % state.backends.length]!);
      const upstream = connect({ host: backend.hostname, port: Number(backend.port) });
      sockets.add(upstream);
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        sockets.delete(upstream);
        if (error.code === 'ECONNREFUSED' && !upstream.bytesWritten) attempt(tries + 1);
        else client.destroy();
      });
      upstream.once('connect', () => {
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        upstream.on('close', () => {
          sockets.delete(upstream);
          client.destroy();
        });
        client.on('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get backends() {
      return state.backends;
    },
    set backends(next: string[]) {
      state.backends = [...next];
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
