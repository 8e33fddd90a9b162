// The default ("system") assistant of a graph has an id derived from the graph id, the same on every
// server that serves the graph, so a graph name works wherever an assistant id is expected.
import { v5 } from 'uuid';

// The official server derives each graph's default assistant id from this namespace.
const GRAPH_ASSISTANT_NAMESPACE = '6ba7b821-9dad-11d1-80b4-00c04fd430c8';

// Derived once per graph id (a SHA-1 each time, ~4 µs, was paid by every run naming its graph). Only
// the ids of served graphs are derived, so the map stays as small as the graph list.
const derived = new Map<string, string>();

/** The default assistant of a graph: the same id on every server that serves the graph. */
export const defaultAssistantId = (graphId: string): string => {
  let id = derived.get(graphId);
  if (id === undefined) derived.set(graphId, (id = v5(graphId, GRAPH_ASSISTANT_NAMESPACE)));
  return id;
};
