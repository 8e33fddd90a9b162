// The benchmark's trivial two-node graph: `a` then `b`, each appending to `steps`. Served by both the
// platform and the reference server (a copy is placed in bench/reference/graphs at bench start).
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export const graph = new StateGraph(State)
  .addNode('a', () => ({ steps: ['a'] }))
  .addNode('b', () => ({ steps: ['b'] }))
  .addEdge(START, 'a')
  .addEdge('a', 'b')
  .addEdge('b', END)
  .compile();
