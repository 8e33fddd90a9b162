// The encryption context of a request, when the project's encryption module has a `context` handler:
// derived once from the authenticated user (custom auth's, else none), then what every seal of the
// request hands its handlers and stores with what it seals (services/encryption/at-rest.ts).
import type { RequestHandler } from 'express';
import { type CustomEncryption, withEncryptionContext } from '../services/encryption/at-rest.js';

/** Runs the rest of the request in the context the project's `context` handler derives from its user (an error answers as any). */
export function encryptionContext(encryption: CustomEncryption): RequestHandler {
  return (req, _res, next) => {
    encryption.contextFor(req.customAuth?.user ?? null).then(
      (metadata) => withEncryptionContext(metadata, () => next()),
      (error: unknown) => next(error),
    );
  };
}
