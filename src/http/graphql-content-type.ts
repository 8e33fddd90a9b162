// POST /graphql with a body yoga cannot read: yoga answers a bare 415; this says why, in GraphQL's shape.
import type { RequestHandler } from 'express';

// What yoga's request parsers read (JSON, GraphQL documents, URL-encoded forms).
const READABLE = ['application/json', 'application/graphql+json', 'application/graphql-response+json', 'application/graphql', 'application/x-www-form-urlencoded'];

export const graphqlContentType: RequestHandler = (req, res, next) => {
  const contentType = req.get('content-type');
  if (req.method !== 'POST' || !contentType) return next();
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  if (READABLE.includes(mediaType)) return next();
  res.status(415).json({
    errors: [
      {
        message: `Unsupported Content-Type ${mediaType.slice(0, 100)}: send the operation as application/json ({"query": "...", "variables": {...}}).`,
        extensions: { code: 'UNSUPPORTED_MEDIA_TYPE' },
      },
    ],
  });
};
