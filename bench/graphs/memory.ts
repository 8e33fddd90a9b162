// The comparison's store graph (bench/reference-compare.ts): remembers a fact for a user in the
// deployment's store and reports every fact it knows for that user. Served by both the platform and
// the reference server (copied into bench/reference/graphs at start).
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  user: Annotation<string>(),
  fact: Annotation<string>(),
  known: Annotation<string[]>(),
});

export const graph = new StateGraph(State)
  .addNode('remember', async (state, config: LangGraphRunnableConfig) => {
    const store = config.store!;
    await store.put(['memories', state.user], `fact-${state.fact.length}`, { fact: state.fact });
    const items = await store.search(['memories', state.user], { limit: 100 });
    return { known: items.map((item) => String(item.value.fact)).sort() };
  })
  .addEdge(START, 'remember')
  .addEdge('remember', END)
  .compile();
