// JSON Schemas of graphs read from their TypeScript types, for graphs whose state carries no runtime
// types (`Annotation` roots, a config annotation whose `model` is `"a" | "b"`), as the reference server
// reads them. One program over the project (its tsconfig.json when it has one) asks the type-checker,
// through a probe file, for each graph's update, input, output and config types, and for those of the
// subgraphs it adds as nodes (`.addNode("name", subgraph)`, found in the source). Runs in a worker
// thread (type-schemas.worker.ts); graph-registry.ts starts it when the graphs load, bounds it in time
// and keeps the answer for the life of the deployment's runtime (one revision).
import { dirname, join, resolve, sep } from 'node:path';
import ts from 'typescript-api';
import type { GraphSchemas } from './graph-schemas.js';

type JsonSchema = Record<string, unknown>;

export type GraphSpec = { graphId: string; file: string; exportName: string };
/** graph id → namespace (`""` for the graph itself, `"editor"`, `"editor|inner"` for subgraphs) → schemas. */
export type TypeSchemas = Record<string, Record<string, GraphSchemas>>;

const KINDS = ['state', 'input', 'output', 'config'] as const;

// The types asked of each graph. An export may be a graph, a StateGraph, a promise or a factory; the
// state is the update type, as the reference answers (what a state edit may send).
const PROBE_PRELUDE = `
import type { UpdateType as __UpdateType } from '@langchain/langgraph';
type __Unwrap<T> = T extends (...args: any[]) => infer R ? Awaited<R> : Awaited<T>;
type __Graph<T> = __Unwrap<T> extends { compile(...args: any[]): infer C } ? C : __Unwrap<T>;
type __State<G> = G extends { '~RunInput': infer U } ? U : never;
type __Input<G> = G extends { '~InputType': infer I } ? I : never;
type __Output<G> = G extends { '~OutputType': infer O } ? O : never;
type __Config<G> = G extends { builder: { _configSchema?: infer C } } ? (Exclude<C, undefined> extends infer D extends Record<string, any> ? __UpdateType<D> : never) : never;
`;

/** `./x.ts` as an import specifier TypeScript resolves under every module setting (`./x.js`). */
const importPath = (file: string) => file.replace(/\.(m|c)?tsx?$/, (_m, kind: string | undefined) => `.${kind ?? ''}js`);

/** Subgraphs a graph adds as nodes, by namespace: `addNode("name", variable)` calls under its declaration. */
function findSubgraphs(source: ts.SourceFile, exportName: string): { namespace: string; variable: string }[] {
  const topLevel = new Map<string, ts.Node>();
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name) && declaration.initializer) topLevel.set(declaration.name.text, declaration.initializer);
      }
    } else if (ts.isFunctionDeclaration(statement) && statement.name && statement.body) {
      topLevel.set(statement.name.text, statement.body);
    }
  }
  const found: { namespace: string; variable: string }[] = [];
  const visit = (root: ts.Node, prefix: string[], stack: Set<string>) => {
    const walk = (node: ts.Node) => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'addNode') {
        const [name, target] = node.arguments;
        // `addNode("x", sub)` or `addNode("x", sub.compile())`
        const variable =
          target && ts.isIdentifier(target)
            ? target.text
            : target && ts.isCallExpression(target) && ts.isPropertyAccessExpression(target.expression) && ts.isIdentifier(target.expression.expression)
              ? target.expression.expression.text
              : undefined;
        if (name && ts.isStringLiteralLike(name) && variable && topLevel.has(variable) && !stack.has(variable)) {
          const namespace = [...prefix, name.text];
          found.push({ namespace: namespace.join('|'), variable });
          visit(topLevel.get(variable)!, namespace, new Set([...stack, variable]));
        }
        // The graph the node is added to (a chain of calls, or a variable declared elsewhere); not
        // the node itself, whose subgraphs are the subgraph's, under its own name (above).
        walk(node.expression.expression);
        return;
      }
      // Names that are not references: a property's (`x.child`, `{ child: … }`).
      if (ts.isPropertyAccessExpression(node)) return walk(node.expression);
      if (ts.isPropertyAssignment(node)) return walk(node.initializer);
      // A graph built in another top-level declaration (`export const graph = builder.compile()`):
      // its nodes are this graph's.
      if (ts.isIdentifier(node) && topLevel.has(node.text) && !stack.has(node.text)) {
        visit(topLevel.get(node.text)!, prefix, new Set([...stack, node.text]));
        return;
      }
      ts.forEachChild(node, walk);
    };
    walk(root);
  };
  const root = topLevel.get(exportName);
  if (root) visit(root, [], new Set([exportName]));
  return found;
}

function compilerOptions(projectDir: string): ts.CompilerOptions {
  const defaults: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowJs: true,
    types: [],
    // Not the DOM's declarations (a third of what a program over a LangGraph project parses): graph
    // state types do not come from them. A tsconfig.json naming its libs is followed.
    lib: ['lib.es2023.d.ts'],
  };
  const configPath = ts.findConfigFile(projectDir, ts.sys.fileExists, 'tsconfig.json');
  let options = defaults;
  if (configPath) {
    const read = ts.readConfigFile(configPath, ts.sys.readFile);
    if (!read.error) options = { ...defaults, ...ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath)).options };
  }
  // Nothing is emitted or reported: only the checker's answers about a few types are wanted.
  return { ...options, noEmit: true, skipLibCheck: true, strict: true, incremental: false, composite: false };
}

function commonDir(files: string[]): string {
  const parts = files.map((file) => dirname(resolve(file)).split(sep));
  const first = parts[0] ?? [];
  let length = first.length;
  for (const other of parts) while (length > 0 && first.slice(0, length).join(sep) !== other.slice(0, length).join(sep)) length--;
  return first.slice(0, length).join(sep) || sep;
}

/** Reads the graphs' schemas from their TypeScript types. A graph (or namespace) the checker cannot type is left out. */
export function readTypeSchemas(specs: GraphSpec[]): TypeSchemas {
  if (!specs.length) return {};
  const projectDir = commonDir(specs.map((spec) => spec.file));
  const options = compilerOptions(projectDir);
  const probePath = join(projectDir, '__agent_platform_type_schemas__.ts');
  const appended = new Map<string, string[]>();
  const lines = [PROBE_PRELUDE];
  const asked: { graphId: string; namespace: string; alias: string }[] = [];
  specs.forEach((spec, i) => {
    const file = resolve(spec.file);
    const specifier = JSON.stringify(importPath(file));
    const ask = (namespace: string, graphType: string) => {
      const alias = `__Schema${asked.length}`;
      lines.push(`type ${alias}G = __Graph<${graphType}>;`);
      lines.push(`export type ${alias}state = __State<${alias}G>; export type ${alias}input = __Input<${alias}G>;`);
      lines.push(`export type ${alias}output = __Output<${alias}G>; export type ${alias}config = __Config<${alias}G>;`);
      asked.push({ graphId: spec.graphId, namespace, alias });
    };
    ask('', `typeof import(${specifier})[${JSON.stringify(spec.exportName)}]`);
    const text = ts.sys.readFile(file);
    if (text === undefined) return;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    // A subgraph held in a module-level variable has no export to name: the graph's file gets one
    // (in this program only; nothing is written to disk).
    findSubgraphs(source, spec.exportName).forEach(({ namespace, variable }, j) => {
      const name = `__agentPlatformSubgraph${i}_${j}`;
      (appended.get(file) ?? appended.set(file, []).get(file)!).push(`export type ${name} = typeof ${variable};`);
      ask(namespace, `import(${specifier}).${name}`);
    });
  });
  const probe = lines.join('\n');

  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (fileName) => {
    if (resolve(fileName) === probePath) return probe;
    const extra = appended.get(resolve(fileName));
    const text = readFile(fileName);
    return extra && text !== undefined ? `${text}\n${extra.join('\n')}\n` : text;
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => resolve(fileName) === probePath || fileExists(fileName);
  host.getSourceFile = (fileName, languageVersion, onError) => {
    const text = host.readFile(fileName);
    if (text === undefined) {
      onError?.(`cannot read ${fileName}`);
      return undefined;
    }
    // JSDoc says nothing about types in TypeScript files, and the libraries' declarations are full of
    // it: parsed only where it gives types (JavaScript files).
    const settings = typeof languageVersion === 'object' ? languageVersion : { languageVersion };
    return ts.createSourceFile(fileName, text, { ...settings, jsDocParsingMode: ts.JSDocParsingMode.ParseForTypeInfo }, true);
  };

  const program = ts.createProgram({ rootNames: [probePath], options, host });
  const checker = program.getTypeChecker();
  const probeFile = program.getSourceFile(probePath)!;
  const aliases = new Map<string, ts.TypeAliasDeclaration>();
  for (const statement of probeFile.statements) if (ts.isTypeAliasDeclaration(statement)) aliases.set(statement.name.text, statement);

  const schemas: TypeSchemas = {};
  for (const { graphId, namespace, alias } of asked) {
    const graphSchemas: GraphSchemas = {};
    for (const kind of KINDS) {
      const declaration = aliases.get(`${alias}${kind}`);
      if (!declaration) continue;
      // A type the writer trips on costs that schema only (the runtime's is served for it).
      try {
        const schema = new SchemaWriter(checker, probeFile).root(checker.getTypeAtLocation(declaration));
        if (schema) graphSchemas[kind] = schema;
      } catch {
        // left out
      }
    }
    // A namespace whose variable is no graph (the checker found no state type) is no subgraph.
    if (graphSchemas.state || graphSchemas.output) (schemas[graphId] ??= {})[namespace] = graphSchemas;
  }
  return schemas;
}

const MESSAGES: JsonSchema = { type: 'array', items: { type: 'object' }, langgraph_type: 'messages' };
const MAX_DEPTH = 8;

/** Turns checker types into JSON Schema (draft-07, as the reference's schemas from types are). */
class SchemaWriter {
  private readonly stack = new Set<ts.Type>();
  constructor(
    private readonly checker: ts.TypeChecker,
    private readonly location: ts.Node,
  ) {}

  /** The schema of a state, input, output or config type: an object; undefined when there is none. */
  root(type: ts.Type): JsonSchema | undefined {
    if (type.flags & ts.TypeFlags.Never) return undefined;
    const schema = this.write(type, 0, false);
    if (!schema || schema.type !== 'object') return undefined;
    return { ...schema, $schema: 'http://json-schema.org/draft-07/schema#' };
  }

  private isMessage(type: ts.Type): boolean {
    const name = type.getSymbol()?.getName() ?? type.aliasSymbol?.getName() ?? '';
    return /Message(Chunk)?$/.test(name) && !!type.getProperty('content') && !!(type.getProperty('getType') ?? type.getProperty('_getType'));
  }

  /** An array (or a union with one) whose items are chat messages: LangGraph's messages channel. */
  private isMessageList(type: ts.Type): boolean {
    const members = type.isUnion() ? type.types : [type];
    return members.some((member) => {
      if (!this.checker.isArrayType(member)) return false;
      const item = this.checker.getTypeArguments(member as ts.TypeReference)[0];
      return !!item && (item.isUnion() ? item.types : [item]).some((candidate) => this.isMessage(candidate));
    });
  }

  private write(type: ts.Type, depth: number, nested: boolean): JsonSchema | undefined {
    const { flags } = type;
    if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return {};
    if (flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void | ts.TypeFlags.Never)) return undefined;
    if (type.isStringLiteral()) return { type: 'string', const: type.value };
    if (type.isNumberLiteral()) return { type: 'number', const: type.value };
    if (flags & ts.TypeFlags.Boolean) return { type: 'boolean' };
    if (flags & ts.TypeFlags.BooleanLiteral) return { type: 'boolean', const: (type as { intrinsicName?: string }).intrinsicName === 'true' };
    if (flags & ts.TypeFlags.StringLike) return { type: 'string' };
    if (flags & ts.TypeFlags.NumberLike) return { type: 'number' };
    if (flags & ts.TypeFlags.BigIntLike) return { type: 'integer' };
    if (flags & ts.TypeFlags.Null) return { type: 'null' };
    if (depth > MAX_DEPTH || this.stack.has(type)) return {};
    if (this.isMessageList(type)) return { ...MESSAGES };
    if (type.isUnion()) return this.union(type, depth);
    if (this.isMessage(type)) return { type: 'object' };
    if (!(flags & ts.TypeFlags.Object) && !type.isIntersection()) return {};
    this.stack.add(type);
    try {
      return this.object(type, depth, nested);
    } finally {
      this.stack.delete(type);
    }
  }

  private union(type: ts.UnionType, depth: number): JsonSchema | undefined {
    // `Overwrite` wrappers (`{__overwrite__: T}`) are LangGraph's way to bypass a reducer: not a value
    // a user sends, so left out. `true | false` is how TypeScript spells `boolean`.
    let members = type.types.filter((member) => !(member.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)) && !member.getProperty('__overwrite__'));
    const booleans = members.filter((member) => member.flags & ts.TypeFlags.BooleanLiteral);
    if (booleans.length === 2) members = [...members.filter((member) => !booleans.includes(member)), this.checker.getBooleanType()];
    if (members.length === 1) return this.write(members[0]!, depth, false);
    // Sorted, as the reference's enums are (the checker's order is that in which it met the literals).
    if (members.length && members.every((member) => member.isStringLiteral())) return { enum: members.map((member) => (member as ts.StringLiteralType).value).sort(), type: 'string' };
    if (members.length && members.every((member) => member.isNumberLiteral())) return { enum: members.map((member) => (member as ts.NumberLiteralType).value).sort((a, b) => a - b), type: 'number' };
    const anyOf = members.map((member) => this.write(member, depth + 1, false)).filter((schema): schema is JsonSchema => !!schema);
    if (anyOf.some((schema) => Object.keys(schema).length === 0)) return {};
    return anyOf.length ? { anyOf } : undefined;
  }

  private object(type: ts.Type, depth: number, nested: boolean): JsonSchema | undefined {
    const { checker } = this;
    if (checker.isTupleType(type)) {
      const items = checker.getTypeArguments(type as ts.TypeReference).map((item) => this.write(item, depth + 1, false) ?? {});
      return { type: 'array', items, minItems: items.length, maxItems: items.length };
    }
    if (checker.isArrayType(type)) {
      const item = checker.getTypeArguments(type as ts.TypeReference)[0];
      return { type: 'array', items: item ? (this.write(item, depth + 1, false) ?? {}) : {} };
    }
    if (type.getSymbol()?.getName() === 'Date') return { type: 'string', format: 'date-time' };
    if (type.getCallSignatures().length && !type.getProperties().length) return undefined;
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const property of checker.getPropertiesOfType(type)) {
      const name = property.getName();
      if (name.startsWith('__@') || name.startsWith('~')) continue;
      const propertyType = checker.getTypeOfSymbolAtLocation(property, this.location);
      // Methods and class internals are no part of a JSON value.
      if (property.flags & ts.SymbolFlags.Method || (propertyType.getCallSignatures().length && !propertyType.getProperties().some((p) => !p.getName().startsWith('__')))) continue;
      const schema = this.write(propertyType, depth + 1, true);
      if (!schema) continue;
      properties[name] = schema;
      const mayBeUndefined = propertyType.isUnion() && propertyType.types.some((member) => member.flags & ts.TypeFlags.Undefined);
      if (!(property.flags & ts.SymbolFlags.Optional) && !mayBeUndefined) required.push(name);
    }
    const index = checker.getIndexInfosOfType(type).find((info) => info.keyType.flags & ts.TypeFlags.String);
    const additional = index ? this.write(index.type, depth + 1, false) : undefined;
    return {
      type: 'object',
      ...(Object.keys(properties).length ? { properties } : {}),
      // Channels are always optional in a state, an update or a config: only nested objects say what they require.
      ...(nested && required.length ? { required } : {}),
      ...(additional && Object.keys(additional).length ? { additionalProperties: additional } : {}),
    };
  }
}
