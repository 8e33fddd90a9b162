// The Pothos builder: plugins and scalars only. Types live in one file per type under src/graphql/<area>/.
import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import ErrorsPlugin from '@pothos/plugin-errors';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import { DateTimeResolver, JSONResolver } from 'graphql-scalars';
import { AppError } from '../../errors.js';
import type PrismaTypes from '../../generated/pothos-types.js';
import { getDatamodel } from '../../generated/pothos-types.js';
import type { ServiceContext } from '../../context.js';

export type GraphQLContext = ServiceContext;

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [ErrorsPlugin, PrismaPlugin, RelayPlugin, DataloaderPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (ctx) => ctx.db.prisma,
    dmmf: getDatamodel(),
    // Descriptions come from our own field descriptions, not from schema.prisma comments.
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  // Relay-style connections (cursor paging). No global `node` fields: types keep their own IDs.
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    pageInfoTypeOptions: { description: 'Where a page of a connection sits in the whole list.' },
    hasNextPageFieldOptions: { description: 'Whether more items follow this page.' },
    hasPreviousPageFieldOptions: { description: 'Whether items precede this page.' },
    startCursorFieldOptions: { description: 'Cursor of the first item of this page.' },
    endCursorFieldOptions: { description: 'Cursor of the last item of this page; pass it as `after` for the next page.' },
    edgesFieldOptions: { description: 'The items of this page, with their cursors.' },
    pageInfoFieldOptions: { description: 'Paging information.' },
    cursorFieldOptions: { description: 'Opaque position of this item in the list.' },
    nodeFieldOptions: { description: 'The item.' },
  },
  errors: {
    // Every field with `errors: {}` returns expected failures (AppError) as typed results.
    defaultTypes: [AppError],
  },
});

builder.addScalarType('DateTime', DateTimeResolver, {});
builder.addScalarType('JSON', JSONResolver, {});

builder.queryType({ description: 'Read the platform.' });
builder.mutationType({ description: 'Change the platform.' });
builder.subscriptionType({ description: 'Live events: revision status, export status, run streams.' });

const ErrorCodeEnum = builder.enumType('ErrorCode', {
  description: 'Stable machine-readable error codes, shared with the REST surfaces.',
  values: ['VALIDATION_FAILED', 'BAD_REQUEST', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNPROCESSABLE', 'UNAVAILABLE', 'TOO_MANY_REQUESTS'] as const,
});

const ValidationIssueRef = builder
  .objectRef<{ loc: (string | number)[]; msg: string; type: string }>('ValidationIssue')
  .implement({
    description: 'One problem with the input, at a location.',
    fields: (t) => ({
      loc: t.stringList({ description: 'Path into the input.', resolve: (issue) => issue.loc.map(String) }),
      msg: t.exposeString('msg', { description: 'What is wrong.' }),
      type: t.exposeString('type', { description: 'The kind of problem.' }),
    }),
  });

builder.objectType(AppError, {
  name: 'AppError',
  description: 'An expected failure: the operation was refused, with a stable code.',
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, description: 'Stable error code.', resolve: (error) => error.code }),
    message: t.exposeString('message', { description: 'Human-readable explanation.' }),
    issues: t.field({
      type: [ValidationIssueRef],
      description: 'For VALIDATION_FAILED: each problem with the input.',
      resolve: (error) => (Array.isArray(error.details) ? error.details : []),
    }),
  }),
});
