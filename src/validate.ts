// Parses service input with its zod schema; failures become VALIDATION_FAILED with `loc` paths.
import type { z } from 'zod';
import { AppError } from './errors.js';

export function parseInput<S extends z.ZodType>(schema: S, input: unknown, root?: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw AppError.fromZod(result.error, root);
  return result.data;
}
