// LangGraph throws these when a request asks a graph for something it cannot do (a state update as a
// node the graph does not have, values its state schema rejects, an ambiguous update): they are the
// client's mistake, so they answer 400 with LangGraph's own message rather than 500.
import { AppError } from '../../errors.js';

// Matched by name: the graph may use its own copy of @langchain/langgraph (or zod).
const CLIENT_ERRORS = new Set(['InvalidUpdateError', 'EmptyInputError', 'GraphValueError', 'StateGraphInputError', 'ZodError', '$ZodError']);

// A checkpoint namespace naming a subgraph the graph does not have (a plain Error in LangGraph).
const UNKNOWN_SUBGRAPH = /^Subgraph ".*" not found$/;
// Values of the wrong type for the state, which LangGraph reports as plain Errors: a `StateSchema`
// field's validation, and a messages channel given something that is no message (LangChain's coded
// error).
const INVALID_VALUE = /^Validation failed for field ".*": /;
const INVALID_VALUE_CODES = new Set(['MESSAGE_COERCION_FAILURE']);

/** The AppError a graph error raised by a request's content stands for, if it is one. */
function graphRequestError(error: unknown): AppError | undefined {
  const { name, message, lc_error_code: code } = (error ?? {}) as { name?: unknown; message?: unknown; lc_error_code?: unknown };
  if (typeof message === 'string' && UNKNOWN_SUBGRAPH.test(message)) return AppError.notFound(message);
  if (typeof message === 'string' && (INVALID_VALUE.test(message) || (typeof code === 'string' && INVALID_VALUE_CODES.has(code)))) return AppError.badRequest(message);
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
