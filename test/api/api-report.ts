/**
 * Builds the text of the public API reports (`etc/*.api.txt`, one per entry point) from a
 * module's declarations with the TypeScript compiler: one block per exported name, runtime
 * values first marked `value`, types marked `type`, each with its members or signature as the
 * compiler prints them. Works on a source entry (`src/index.ts`) and on its built declaration
 * file (`dist/index.d.ts`) alike; one program can serve several entries.
 */
import ts from 'typescript';

export interface ApiEntry {
  readonly name: string;
  /** True for a runtime name (class, function, const); false for a type-only export. */
  readonly value: boolean;
  /** `class`, `function`, `const`, `interface` or `type`. */
  readonly kind: string;
  /** Signature lines: members of classes and interfaces, the signature of functions, the type of consts. */
  readonly lines: readonly string[];
}

const FLAGS =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseFullyQualifiedType |
  ts.TypeFormatFlags.WriteArrowStyleSignature;

function kindOf(symbol: ts.Symbol): string {
  const f = symbol.flags;
  if (f & ts.SymbolFlags.Class) return 'class';
  if (f & ts.SymbolFlags.Function) return 'function';
  if (f & ts.SymbolFlags.Variable) return 'const';
  if (f & ts.SymbolFlags.Interface) return 'interface';
  return 'type';
}

function isPublic(symbol: ts.Symbol): boolean {
  if (symbol.name.startsWith('#') || symbol.name.startsWith('__')) return false;
  const mods = symbol.declarations?.[0] === undefined ? 0 : ts.getCombinedModifierFlags(symbol.declarations[0]);
  return (mods & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0;
}

/** Declared by this package (not inherited from undici's Dispatcher, Node's EventEmitter...). */
function isOwn(symbol: ts.Symbol): boolean {
  return (symbol.declarations ?? []).some((d) => !d.getSourceFile().fileName.includes('/node_modules/'));
}

function members(checker: ts.TypeChecker, type: ts.Type, at: ts.Node, prefix: string): string[] {
  const out: string[] = [];
  for (const p of checker.getPropertiesOfType(type)) {
    if (!isPublic(p) || !isOwn(p) || p.name === 'prototype') continue;
    const t = checker.getTypeOfSymbolAtLocation(p, at);
    const optional = p.flags & ts.SymbolFlags.Optional ? '?' : '';
    const sigs = t.getCallSignatures();
    if (p.flags & ts.SymbolFlags.Method && sigs.length > 0) {
      for (const s of sigs) out.push(`${prefix}${p.name}${optional}${checker.signatureToString(s, at, FLAGS)}`);
    } else {
      out.push(`${prefix}${p.name}${optional}: ${checker.typeToString(t, at, FLAGS)}`);
    }
  }
  return out.sort();
}

/** `import("/abs/repo/node_modules/undici/index")` → `import("undici/index")`, so the report is machine-independent. */
function relativePaths(line: string): string {
  return line
    .replace(/import\("[^"]*\/node_modules\//g, 'import("')
    .replace(/import\("[^"]*\/(src|dist)\//g, 'import("$1/');
}

/** A compiler program over the entry files `files` (sources or declaration files). */
export function apiProgram(files: readonly string[]): ts.Program {
  return ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  });
}

/** The symbols `file` exports, as written (aliases unresolved). */
export function moduleExports(program: ts.Program, file: string): ts.Symbol[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  if (source === undefined) throw new Error(`api report: cannot read ${file}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (moduleSymbol === undefined) throw new Error(`api report: ${file} is not a module`);
  return checker.getExportsOfModule(moduleSymbol);
}

/** Every export of the module in `file`, sorted: runtime names first, then types. */
export function apiEntries(program: ts.Program, file: string): ApiEntry[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const entries: ApiEntry[] = [];
  for (const exported of moduleExports(program, file)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const decl = symbol.declarations?.[0] ?? source;
    const kind = kindOf(symbol);
    const value =
      (symbol.flags & ts.SymbolFlags.Value) !== 0 &&
      !(exported.declarations ?? []).some((d) => ts.isTypeOnlyImportOrExportDeclaration(d));
    let lines: string[];
    if (kind === 'class') {
      const staticType = checker.getTypeOfSymbolAtLocation(symbol, decl);
      const ctor = staticType.getConstructSignatures().map((s) => `new${checker.signatureToString(s, decl, FLAGS)}`);
      lines = [
        ...ctor,
        ...members(checker, staticType, decl, 'static '),
        ...members(checker, checker.getDeclaredTypeOfSymbol(symbol), decl, ''),
      ];
    } else if (kind === 'function') {
      const t = checker.getTypeOfSymbolAtLocation(symbol, decl);
      lines = t.getCallSignatures().map((s) => checker.signatureToString(s, decl, FLAGS));
    } else if (kind === 'const') {
      lines = [checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, decl), decl, FLAGS)];
    } else if (kind === 'interface') {
      lines = members(checker, checker.getDeclaredTypeOfSymbol(symbol), decl, '');
    } else {
      const t = checker.getDeclaredTypeOfSymbol(symbol);
      lines = [checker.typeToString(t, decl, FLAGS | ts.TypeFormatFlags.InTypeAlias)];
    }
    entries.push({ name: exported.name, value, kind, lines: lines.map(relativePaths) });
  }
  return entries.sort((a, b) => Number(b.value) - Number(a.value) || a.name.localeCompare(b.name));
}

/** One entry point of the package: its import specifier, source file and report file. */
export interface EntryPoint {
  /** `evenlb`, `evenlb/server`... */
  readonly specifier: string;
  /** Source entry, relative to the repository (`src/index.ts`). */
  readonly source: string;
  /** Built declarations, relative to the repository (`dist/index.d.ts`). */
  readonly declarations: string;
  /** The report, relative to the repository (`etc/evenlb.api.txt`). */
  readonly report: string;
  /** At most this many runtime names. */
  readonly maxRuntimeNames: number;
}

/** The report text for `entries` of `entry`. */
export function renderApiReport(entry: EntryPoint, entries: readonly ApiEntry[]): string {
  const values = entries.filter((e) => e.value).length;
  const head = [
    `# evenlb public API: every name "${entry.specifier}" exports, with its shape.`,
    `# Generated from ${entry.source}; test/api/public-api.test.ts fails when they differ. After an`,
    '# intended change: UPDATE_API_REPORT=1 npx vitest run test/api/public-api.test.ts',
    `# ${values} runtime names (at most ${entry.maxRuntimeNames}), ${entries.length - values} type-only names.`,
    '',
  ];
  const body = entries.flatMap((e) => [
    `${e.value ? 'value' : 'type'} ${e.kind} ${e.name}`,
    ...e.lines.map((l) => `  ${l}`),
    '',
  ]);
  return [...head, ...body].join('\n');
}
