// A counting gate: at most `size` callers run at once, the rest wait their turn in order.

export type Gate = { run<T>(work: () => Promise<T>): Promise<T> };

export function createGate(size: number): Gate {
  let running = 0;
  const waiting: (() => void)[] = [];
  return {
    async run(work) {
      if (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
      running++;
      try {
        return await work();
      } finally {
        running--;
        waiting.shift()?.();
      }
    },
  };
}
