// Which exports of the product's files does any other file import? A scan of the tree with the TypeScript
// parser (no type checking): every `export` a file makes, every name another file imports from it, followed
// through re-exports (`export { x } from`, `export * from`). Used by test/architecture-exports.test.ts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

/** An import of `names` (or of everything: '*') from the file `from`, made by `by`. */
interface Use {
  by: string;
  from: string;
  names: string[] | '*';
}

interface Exports {
  /** Names the file declares and exports itself. */
  own: Set<string>;
  /** `export { a as b } from './x'`: b → { from: x, name: a } ('*' for `export * as b`). */
  forwarded: Map<string, { from: string; name: string }>;
  /** `export * from './x'`. */
  star: string[];
}

export function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    if (name === 'node_modules' || name === 'peer' || name === 'artifacts') continue;
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...sourceFiles(root, rel));
    else if (/\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.d.mts')) out.push(rel);
  }
  return out;
}

const hasExport = (node: ts.Node) =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

function bindingNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : bindingNames(e.name)));
}

/** Resolves a relative specifier to a repository path ('.js' written for a '.ts' file included). */
function resolve(files: Set<string>, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = normalize(join(dirname(from), spec));
  for (const candidate of [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, join(base, 'index.ts')]) {
    if (files.has(candidate)) return candidate;
  }
  return undefined;
}

function scan(root: string, file: string, files: Set<string>): { exports: Exports; uses: Use[] } {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    false,
    file.endsWith('.mjs') ? ts.ScriptKind.JS : ts.ScriptKind.TS,
  );
  const exports: Exports = { own: new Set(), forwarded: new Map(), star: [] };
  const uses: Use[] = [];
  const use = (spec: string, names: string[] | '*') => {
    const from = resolve(files, file, spec);
    if (from) uses.push({ by: file, from, names });
  };

  for (const stmt of source.statements) {
    if (ts.isImportDeclaration(stmt) && ts.isStringLiteral(stmt.moduleSpecifier)) {
      const clause = stmt.importClause;
      const names: string[] = [];
      let all = false;
      if (clause?.name) names.push('default');
      if (clause?.namedBindings && ts.isNamespaceImport(clause.namedBindings)) all = true;
      if (clause?.namedBindings && ts.isNamedImports(clause.namedBindings)) {
        for (const e of clause.namedBindings.elements) names.push((e.propertyName ?? e.name).text);
      }
      use(stmt.moduleSpecifier.text, all ? '*' : names);
    } else if (ts.isExportDeclaration(stmt)) {
      const spec = stmt.moduleSpecifier && ts.isStringLiteral(stmt.moduleSpecifier) ? stmt.moduleSpecifier.text : undefined;
      const from = spec ? resolve(files, file, spec) : undefined;
      if (!stmt.exportClause) {
        if (from) exports.star.push(from);
      } else if (ts.isNamespaceExport(stmt.exportClause)) {
        if (from) exports.forwarded.set(stmt.exportClause.name.text, { from, name: '*' });
      } else {
        for (const e of stmt.exportClause.elements) {
          const local = (e.propertyName ?? e.name).text;
          if (from) exports.forwarded.set(e.name.text, { from, name: local });
          else exports.own.add(e.name.text); // `export { a, b as c }` of the file's own names
        }
      }
    } else if (ts.isExportAssignment(stmt)) {
      exports.own.add('default');
    } else if (hasExport(stmt)) {
      const isDefault = (ts.getModifiers(stmt as ts.HasModifiers) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
      if (isDefault) exports.own.add('default');
      else if (ts.isVariableStatement(stmt))
        for (const d of stmt.declarationList.declarations) for (const n of bindingNames(d.name)) exports.own.add(n);
      else if ('name' in stmt && stmt.name && ts.isIdentifier(stmt.name as ts.Node)) exports.own.add((stmt.name as ts.Identifier).text);
    }
  }

  // Dynamic imports (`await import('./x.ts')`) and type imports (`typeof import('./x.ts')`) anywhere in the file.
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) use(arg.text, '*');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      use(node.argument.literal.text, node.qualifier && ts.isIdentifier(node.qualifier) ? [node.qualifier.text] : '*');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { exports, uses };
}

/**
 * The exports of `checked` files that no file imports, as `file: name`. `importers` says whose imports count
 * (every scanned file when it is not given).
 */
export function unusedExports(
  root: string,
  folders: string[],
  checked: (file: string) => boolean,
  importers: (file: string) => boolean = () => true,
): string[] {
  const all = folders.flatMap((d) => sourceFiles(root, d));
  const files = new Set(all);
  const scanned = new Map(all.map((f) => [f, scan(root, f, files)]));
  const used = new Map<string, Set<string>>(all.map((f) => [f, new Set()]));

  // Marks `name` of `file` used, following it through the file's re-exports.
  const mark = (file: string, name: string, seen = new Set<string>()) => {
    const key = `${file}#${name}`;
    if (seen.has(key)) return;
    seen.add(key);
    const exp = scanned.get(file)?.exports;
    if (!exp) return;
    if (name === '*') {
      for (const n of exp.own) used.get(file)!.add(n);
      for (const [n, f] of exp.forwarded) {
        used.get(file)!.add(n);
        mark(f.from, f.name, seen);
      }
      for (const s of exp.star) mark(s, '*', seen);
      return;
    }
    used.get(file)!.add(name);
    const fwd = exp.forwarded.get(name);
    if (fwd) mark(fwd.from, fwd.name, seen);
    else if (!exp.own.has(name)) for (const s of exp.star) mark(s, name, seen);
  };

  for (const [file, { uses }] of scanned) {
    if (!importers(file)) continue;
    for (const u of uses) {
      if (u.from === file) continue;
      if (u.names === '*') mark(u.from, '*');
      else for (const n of u.names) mark(u.from, n);
    }
  }

  const unused: string[] = [];
  for (const [file, { exports }] of scanned) {
    if (!checked(file)) continue;
    for (const name of [...exports.own, ...exports.forwarded.keys()]) if (!used.get(file)!.has(name)) unused.push(`${file}: ${name}`);
  }
  return unused.sort();
}
