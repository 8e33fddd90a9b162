// Writes schema.graphql from the code (npm run schema:print). Review the diff like any other code.
import { writeFileSync } from 'node:fs';
import { printedSchema } from '../src/platform/graphql/schema.js';

writeFileSync(new URL('../schema.graphql', import.meta.url), printedSchema());
console.log('schema.graphql written');
