// The default ("system") assistant of a graph has an id derived from the graph id, the same on every
// server that serves the graph, so a graph name works wherever an assistant id is expected.
import { v5 } from 'uuid';

// The official server derives each graph's default assistant id from this namespace.
const GRAPH_ASSISTANT_NAMESPACE = '6ba7b821-9dad-11d1-80b4-00c04fd430c8';

/** The default assistant of a graph: the same id on every server that serves the graph. */
export const defaultAssistantId = (graphId: string): string => v5(graphId, GRAPH_ASSISTANT_NAMESPACE);
