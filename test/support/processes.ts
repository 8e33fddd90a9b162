// Spawns the real CLI (`bin/agent-platform.mjs`) as a child process and waits for what it prints.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

const CLI = new URL('../../bin/agent-platform.mjs', import.meta.url).pathname;

export type PlatformProcess = {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** SIGTERM, then resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * Sends `signal` to the process's whole group, as a terminal's Ctrl-C does (needs `ownGroup`), then
   * resolves with the exit code once every process of the group that shares its output is done with it.
   */
  stopGroup(signal: NodeJS.Signals): Promise<number | null>;
};

export type SpawnOptions = {
  /** Its own process group, like a shell's foreground job, so a signal can go to the whole group. */
  ownGroup?: boolean;
  cwd?: string;
  /** What runs the CLI instead of `node bin/agent-platform.mjs`, the arguments following (`['npm', 'start', '--']`). */
  via?: string[];
  /** On a pseudo-terminal (util-linux `script`), as in a terminal: its output is what the terminal shows. */
  terminal?: boolean;
};

/**
 * Starts `agent-platform <args>` and resolves once it prints its URL (or rejects with its output).
 * `ready` says what to wait for instead, for a process with no URL (its first group, if any, is the url).
 */
export async function spawnPlatform(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 60_000,
  ready: RegExp = /running at (http:\/\/\S+)/,
  options: SpawnOptions = {},
): Promise<PlatformProcess> {
  const command = [...(options.via ?? [process.execPath, CLI]), ...args];
  const [file, ...rest] = options.terminal ? [TERMINAL, '--quiet', '--flush', '--return', '--command', command.map(shellQuoted).join(' '), '/dev/null'] : command;
  const child = spawn(file!, rest, {
    cwd: options.cwd,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownGroup ?? false,
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const check = () => {
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] ?? '');
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before printing a URL:\n${output}`));
    });
  });
  return {
    child,
    url,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
    async stopGroup(signal) {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      // What it started with the same output (npm's script, say) may outlive it by its own shutdown.
      const outputDone = Promise.all([once(child.stdout!, 'close'), once(child.stderr!, 'close')]);
      process.kill(-child.pid!, signal);
      const [code] = await exited;
      await outputDone;
      return code as number | null;
    },
  };
}

/** Runs the CLI to completion; resolves with exit code and output. */
export async function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, stdout, stderr };
}

// util-linux's `script` runs a command on a pseudo-terminal of its own.
const TERMINAL = 'script';
/** Whether `spawnPlatform`'s `terminal` option can be used on this machine. */
export const terminalAvailable = spawnSync(TERMINAL, ['--version'], { stdio: 'ignore' }).status === 0;

const shellQuoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/** Resolves once no process has the id any more. */
export async function gone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
