// bench:stream-idle's graph: `ticks` custom events, one every `interval_ms`, each saying when the graph
// made it (`at`, ms since the epoch), so the bench can tell a late event made late from one delivered late.
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import { setTimeout as sleep } from 'node:timers/promises';

const State = Annotation.Root({
  ticks: Annotation<number>(),
  interval_ms: Annotation<number>(),
});

export const graph = new StateGraph(State)
  .addNode('tick', async (state, config: LangGraphRunnableConfig) => {
    for (let i = 0; i < state.ticks; i++) {
      config.writer?.({ i, at: Date.now() });
      await sleep(state.interval_ms, undefined, { signal: config.signal });
    }
    return {};
  })
  .addEdge(START, 'tick')
  .addEdge('tick', END)
  .compile();
