// Child servers for the benches: the platform's `serve` and the reference server, each in its own
// process group so that stopping one stops everything it started.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** A port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer().on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });

/** Spawns a server in its own process group and resolves once its output matches `ready` (120 s at most). */
export function startProcess(command: string, args: string[], options: { cwd: string; env?: Record<string, string>; ready: RegExp }): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready after 120 s:\n${output.slice(-3000)}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (options.ready.test(output)) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output.slice(-3000)}`)));
  });
}

/** SIGTERM to the process group, SIGKILL after 10 s. */
export const stopProcess = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
    setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 10_000).unref();
  });
