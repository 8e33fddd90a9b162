// The floor the run benches compare with: the served two-node graph invoked in the bench's own
// process, CPU µs per invoke (every thread of the process, as a server's CPU per run counts its own),
// without a checkpointer and with a MemorySaver and a thread per run (issue 42's floor: a durable run
// against the same graph's own work).
import { type BaseCheckpointSaver, MemorySaver } from '@langchain/langgraph';
import { graph } from './graphs/two-node.js';

const durableGraph = graph.builder.compile({ checkpointer: new MemorySaver() });
let thread = 0;

export async function floorCpuMicroseconds(durable: boolean, invokes = 500): Promise<number> {
  const invoke = () => (durable ? durableGraph.invoke({ steps: [] }, { configurable: { thread_id: `floor-${thread++}` } }) : graph.invoke({ steps: [] }));
  for (let i = 0; i < 50; i++) await invoke();
  const before = process.cpuUsage();
  for (let i = 0; i < invokes; i++) await invoke();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / invokes;
}

/**
 * The durable floor under the servers' load: `concurrency` callers invoking the graph compiled with
 * `saver` for `seconds`, each run on a new thread (as bench:cpu's durable runs are). Runs completed.
 */
export async function floorWindow(saver: BaseCheckpointSaver, seconds: number, concurrency: number): Promise<number> {
  const compiled = compiledWith.get(saver) ?? compiledWith.set(saver, graph.builder.compile({ checkpointer: saver })).get(saver)!;
  const deadline = performance.now() + seconds * 1000;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await compiled.invoke({ steps: [] }, { configurable: { thread_id: `floor-${thread++}` } });
        completed++;
      }
    }),
  );
  return completed;
}
const compiledWith = new Map<BaseCheckpointSaver, typeof durableGraph>();
