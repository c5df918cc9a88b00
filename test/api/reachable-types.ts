/**
 * Finds the named types a user meets in an entry point's signatures but cannot import: every
 * class, interface and non-generic type alias declared in `src/` that is reachable from an
 * exported name (through members, parameters, results, type arguments, base types) and that
 * no entry point exports. Types are walked as the compiler resolves them, so an inferred member
 * type counts as much as a written one. Generic aliases (`Parsed<typeof spec>`, the options
 * machinery) are type functions, not names a user holds: their results are walked instead.
 * Types from other packages (undici, Node, prom-client) are the user's to import from there.
 */
import ts from 'typescript';
import { moduleExports } from './api-report.js';

/** One unexported type and the first path by which an exported name reaches it. */
export interface UnexportedType {
  readonly name: string;
  /** Declaring file, relative to `src/`. */
  readonly file: string;
  /** `ExportedName.member.member`. */
  readonly via: string;
}

const isOwn = (symbol: ts.Symbol): boolean =>
  (symbol.declarations ?? []).some((d) => {
    const f = d.getSourceFile().fileName;
    return f.includes('/src/') && !f.includes('/node_modules/');
  });

const isPublic = (symbol: ts.Symbol): boolean => {
  if (symbol.name.startsWith('#') || symbol.name.startsWith('__')) return false;
  const decl = symbol.declarations?.[0];
  const mods = decl === undefined ? 0 : ts.getCombinedModifierFlags(decl);
  return (mods & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0;
};

const NAMED = ts.SymbolFlags.Class | ts.SymbolFlags.Interface | ts.SymbolFlags.Enum;

export interface ReachableTypesResult {
  readonly unexported: readonly UnexportedType[];
  /** The `skip` paths that were met (a path never met is stale). */
  readonly skipped: readonly string[];
}

/**
 * The named types reachable from `entry`'s exports that neither `entry` nor any of `alsoFrom`
 * exports, sorted by name. Members whose path is in `skip` (`ProxyServer.clusters`) are not
 * walked into.
 *
 * @example
 * unexportedReachableTypes(program, 'src/grpc/index.ts', ['src/index.ts']).unexported;
 * // [{ name: 'LoadTracker', file: 'balancing/endpoint-load.ts', via: 'Balancer.loads' }]
 */
export function unexportedReachableTypes(
  program: ts.Program,
  entry: string,
  alsoFrom: readonly string[] = [],
  skip: readonly string[] = [],
): ReachableTypesResult {
  const checker = program.getTypeChecker();
  const resolve = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exported = new Set([entry, ...alsoFrom].flatMap((file) => moduleExports(program, file)).map((s) => resolve(s)));
  const found = new Map<ts.Symbol, UnexportedType>();
  const seenTypes = new Set<ts.Type>();
  const skipped = new Set<string>();

  const signature = (sig: ts.Signature, via: string): void => {
    for (const p of sig.getParameters()) visit(checker.getTypeOfSymbol(p), `${via}(${p.name})`);
    for (const tp of sig.getTypeParameters() ?? []) {
      const c = tp.getConstraint();
      if (c !== undefined) visit(c, via);
    }
    visit(checker.getReturnTypeOfSignature(sig), `${via}()`);
  };

  /** Members, signatures and index types of `type`. */
  const structure = (type: ts.Type, via: string): void => {
    for (const p of checker.getPropertiesOfType(type)) {
      if (!isPublic(p) || !isOwn(p)) continue;
      const path = `${via}.${p.name}`;
      if (skip.includes(path)) skipped.add(path);
      else visit(checker.getTypeOfSymbol(p), path);
    }
    for (const sig of type.getCallSignatures()) signature(sig, via);
    for (const sig of type.getConstructSignatures()) signature(sig, `new ${via}`);
    for (const info of checker.getIndexInfosOfType(type)) visit(info.type, `${via}[]`);
  };

  /** A declared name: its whole shape (instance, static side, bases, alias body). */
  const expand = (symbol: ts.Symbol, via: string): void => {
    const declared = checker.getDeclaredTypeOfSymbol(symbol);
    if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface)) {
      structure(declared, via);
      const bases = declared.isClassOrInterface() ? checker.getBaseTypes(declared) : [];
      for (const base of bases) visit(base, `${via} extends`);
    } else if (symbol.flags & ts.SymbolFlags.TypeAlias) {
      if (declared.isUnionOrIntersection()) for (const t of declared.types) visit(t, via);
      else structure(declared, via);
    }
    if (symbol.flags & ts.SymbolFlags.Value) structure(checker.getTypeOfSymbol(symbol), via);
  };

  const named = (symbol: ts.Symbol, via: string): void => {
    if (exported.has(symbol) || found.has(symbol)) return;
    const file = symbol.declarations?.[0]?.getSourceFile().fileName ?? '';
    found.set(symbol, { name: symbol.name, file: file.slice(file.lastIndexOf('/src/') + 5), via });
    expand(symbol, via);
  };

  function visit(type: ts.Type, via: string): void {
    if (seenTypes.has(type)) return;
    seenTypes.add(type);
    const alias = type.aliasSymbol;
    if (alias !== undefined && !isOwn(alias)) {
      // `Partial<X>`, `Readonly<X>`: the arguments are what the user meets.
      for (const arg of type.aliasTypeArguments ?? []) visit(arg, via);
      return;
    }
    if (alias !== undefined) {
      const generic = (checker.getDeclaredTypeOfSymbol(alias).aliasTypeArguments ?? []).length > 0;
      if (!generic) {
        named(alias, via);
        return;
      }
      // An own generic alias is a type function: its result below is what the user meets.
    }
    if (type.isUnionOrIntersection()) {
      for (const t of type.types) visit(t, via);
      return;
    }
    if (!(type.flags & ts.TypeFlags.Object)) return;
    if ((type as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference) {
      for (const arg of checker.getTypeArguments(type as ts.TypeReference)) visit(arg, via);
    }
    const symbol = type.getSymbol();
    if (symbol !== undefined && symbol.flags & NAMED) {
      if (isOwn(symbol)) named(symbol, via);
      return;
    }
    if (symbol !== undefined && !isOwn(symbol)) return;
    structure(type, via);
  }

  for (const raw of moduleExports(program, entry)) {
    expand(resolve(raw), raw.name);
  }
  return {
    unexported: [...found.values()].sort((a, b) => a.name.localeCompare(b.name)),
    skipped: [...skipped].sort(),
  };
}
