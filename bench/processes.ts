// Child processes for benchmarks: a free loopback port, a server process started until its output says
// it is ready, and stopped with its whole process group.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer().on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });

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
