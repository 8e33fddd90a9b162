// Request validation: zod schemas named after API nouns; failures become 422 with FastAPI-style locs.
import type { Request } from 'express';
import type { z } from 'zod';
import { parseInput } from '../validate.js';

export const parseBody = <S extends z.ZodType>(schema: S, req: Request): z.output<S> => parseInput(schema, req.body ?? {}, 'body');
export const parseQuery = <S extends z.ZodType>(schema: S, req: Request): z.output<S> => parseInput(schema, req.query, 'query');
