// LangGraph throws these when a request asks a graph for something it cannot do (a state update as a
// node the graph does not have, values its state schema rejects, an ambiguous update): they are the
// client's mistake, so they answer 400 with LangGraph's own message rather than 500.
import { AppError } from '../errors.js';

// Matched by name: the graph may use its own copy of @langchain/langgraph (or zod).
const CLIENT_ERRORS = new Set(['InvalidUpdateError', 'EmptyInputError', 'GraphValueError', 'StateGraphInputError', 'ZodError', '$ZodError']);

// A checkpoint namespace naming a subgraph the graph does not have (a plain Error in LangGraph).
const UNKNOWN_SUBGRAPH = /^Subgraph ".*" not found$/;

/** The AppError a graph error raised by a request's content stands for, if it is one. */
function graphRequestError(error: unknown): AppError | undefined {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  if (typeof message === 'string' && UNKNOWN_SUBGRAPH.test(message)) return AppError.notFound(message);
  if (typeof name !== 'string' || !CLIENT_ERRORS.has(name)) return undefined;
  return AppError.badRequest(String(message));
}

/** Runs graph work on behalf of a request: client-caused graph errors become BAD_REQUEST. */
export async function asGraphRequest<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw graphRequestError(error) ?? error;
  }
}
