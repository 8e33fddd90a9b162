// The thread-stream benchmark's graph (bench/thread-stream.bench.ts): `steps` supersteps, each writing
// `burst` custom events (each with `pad` bytes of padding) and one value, so one run streams a few
// hundred protocol events.
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  steps: Annotation<number>(),
  burst: Annotation<number>(),
  pad: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  done: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
});

export const graph = new StateGraph(State)
  .addNode('step', (state, config: LangGraphRunnableConfig) => {
    const padding = state.pad ? { pad: 'x'.repeat(state.pad) } : {};
    for (let i = 0; i < state.burst; i++) config.writer?.({ step: state.done, i, ...padding });
    return { done: state.done + 1 };
  })
  .addEdge(START, 'step')
  .addConditionalEdges('step', (state) => (state.done < state.steps ? 'step' : END), ['step', END])
  .compile();
