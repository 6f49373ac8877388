// Production build of the server: code generation (turbo run generate), then one esbuild bundle of
// apps/server and the workspace packages it uses into apps/server/dist, run with plain `node` (no tsx,
// no TypeScript at run time). Third-party packages stay outside the bundle, imported from where they
// are installed. Plain JavaScript, so that it runs before anything is built.
//
// The bundle behaves as the sources do under tsx:
// - A bare import is resolved as Node resolves it from the importing source file (pnpm gives every
//   package only its own dependencies), and the bundle loads the result by a path relative to itself:
//   ES modules with `import`, CommonJS files with `require` (what Node does for them anyway, minus the
//   scan of their source for export names that an `import` of CommonJS costs at every start).
// - `import.meta.url` in a source file still means that file's URL (computed relative to the bundle), so
//   code that finds files next to its sources (Prisma's schema and migrations, the spec, the PostgreSQL
//   watchdog script) finds them.
// The whole repository therefore moves as one; nothing absolute is baked in.
//
// Freshness: dist/build-info.json records every input (the sources, the spec, the Prisma schema, the
// package manifests, the lockfile and pnpm's record of node_modules) with its size, modification time
// and content hash. `isFresh()` costs a few milliseconds, so `start` checks it every time and only
// builds when something changed.
//
//   node apps/server/scripts/build.mjs            build when stale
//   node apps/server/scripts/build.mjs --force    build anyway
//   node apps/server/scripts/build.mjs --if-possible   (postinstall) never fail the install; `start` retries
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = path.resolve(serverDir, '../..');
export const distDir = path.join(serverDir, 'dist');
export const entryFile = path.join(distDir, 'main.js');
const infoFile = path.join(distDir, 'build-info.json');

/** Directories (walked recursively) and files whose change calls for a new build. */
const INPUT_DIRS = ['apps/server/src', 'apps/server/scripts', 'packages', 'spec'];
const INPUT_FILES = ['package.json', 'apps/server/package.json', 'apps/server/tsconfig.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'turbo.json', 'tsconfig.base.json', 'node_modules/.modules.yaml'];
const SKIP = new Set(['node_modules', 'dist', '.turbo', 'test']);
/** Generated files that must exist (they are not committed); `generate` makes them. */
const GENERATED = ['spec/dist/openapi.json', 'spec/dist/openapi.yaml', 'spec/dist/docs.html', 'packages/db/src/generated/prisma/client.ts'];

function walk(dir, out) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    if (SKIP.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.isFile()) out.push(full);
  }
}

function inputFiles() {
  const files = [];
  for (const dir of INPUT_DIRS) walk(path.join(repoRoot, dir), files);
  for (const file of INPUT_FILES) files.push(path.join(repoRoot, file));
  return files.map((file) => path.relative(repoRoot, file).split(path.sep).join('/')).sort();
}

const sha256 = (file) => createHash('sha256').update(readFileSync(path.join(repoRoot, file))).digest('hex');
const nodeMajor = () => process.versions.node.split('.')[0];

/** Size, modification time and content hash of every input: what build-info.json records. */
export function describeInputs() {
  const files = {};
  for (const file of inputFiles()) {
    try {
      const s = statSync(path.join(repoRoot, file));
      files[file] = [s.size, s.mtimeMs, sha256(file)];
    } catch {}
  }
  return { node: nodeMajor(), files };
}

/**
 * The build in dist/ matches the inputs. Files whose size and modification time are as recorded are
 * taken as unchanged (a few milliseconds for all of them); the content of the others is compared, so
 * that rewriting a file with the same content (code generation, a checkout) does not call for a build.
 */
export function isFresh() {
  let info;
  try {
    info = JSON.parse(readFileSync(infoFile, 'utf8'));
  } catch {
    return false;
  }
  if (!existsSync(entryFile) || !GENERATED.every((file) => existsSync(path.join(repoRoot, file)))) return false;
  if (info.node !== nodeMajor() || !info.files) return false;
  const files = inputFiles();
  if (files.length !== Object.keys(info.files).length) return false;
  for (const file of files) {
    const recorded = info.files[file];
    if (!recorded) return false;
    let s;
    try {
      s = statSync(path.join(repoRoot, file));
    } catch {
      return false;
    }
    if (s.size !== recorded[0]) return false;
    if (s.mtimeMs !== recorded[1] && sha256(file) !== recorded[2]) return false;
  }
  return true;
}

/** `turbo run generate`: the spec bundle and docs, the API types, the wire plan, the Prisma client. */
function generate() {
  const turbo = path.join(repoRoot, 'node_modules', '.bin', process.platform === 'win32' ? 'turbo.cmd' : 'turbo');
  const result = spawnSync(turbo, ['run', 'generate', '--output-logs=errors-only'], {
    cwd: repoRoot,
    stdio: 'inherit',
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
  });
  if (result.error?.code === 'ENOENT') throw new Error(`${turbo} is missing: install first (npx pnpm@10.34.9 install)`);
  if (result.status !== 0) throw new Error('code generation (turbo run generate) failed; run builds through pnpm (e.g. npx pnpm@10.34.9 build), which puts pnpm on the PATH turbo needs');
}

/** The esbuild that tsx (a root dev dependency) ships with: the same compiler that runs the sources. */
async function loadEsbuild() {
  const fromTsx = createRequire(createRequire(path.join(repoRoot, 'package.json')).resolve('tsx/package.json'));
  return import(fromTsx.resolve('esbuild'));
}

const isBare = (spec) => !spec.startsWith('.') && !spec.startsWith('/') && !/^[a-z]+:/i.test(spec);
const builtins = new Set(builtinModules);
const toImportPath = (from, file) => {
  const rel = path.relative(from, file).split(path.sep).join('/');
  return rel.startsWith('.') ? rel : `./${rel}`;
};

/** Whether Node loads this file as CommonJS: .cjs, or .js in a package that is not "type": "module". */
function isCommonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).type !== 'module';
  }
  return true;
}

/** See the header: bare imports of third-party packages stay external, by relative path; import.meta.url kept per file. */
function sourceSemanticsPlugin(outdir) {
  return {
    name: 'parley-source-semantics',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (!isBare(args.path) || args.pluginData?.parleyResolving) return undefined;
        if (builtins.has(args.path) || builtins.has(args.path.split('/')[0])) return { path: args.path, external: true };
        if (args.path.startsWith('@parley/')) return undefined; // workspace packages are bundled
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: { parleyResolving: true },
        });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        // CommonJS files are required (as esbuild bundles CommonJS), which spares Node scanning their
        // source for export names, as it must when ES modules import them; ES modules are imported.
        if (isCommonJs(resolved.path)) return { path: resolved.path, namespace: 'parley-require' };
        return { path: toImportPath(outdir, resolved.path), external: true };
      });
      build.onLoad({ filter: /.*/, namespace: 'parley-require' }, (args) => ({
        contents: `module.exports = __parleyRequire(${JSON.stringify(toImportPath(outdir, args.path))});`,
        loader: 'js',
      }));
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        let contents = readFileSync(args.path, 'utf8');
        const other = /import\.meta\.(?!url\b)\w+/.exec(contents);
        if (other) return { errors: [{ text: `${other[0]} is not supported by the bundle (only import.meta.url is)` }] };
        if (contents.includes('import.meta.url')) {
          const url = `new URL(${JSON.stringify(toImportPath(outdir, args.path))}, import.meta.url).href`;
          contents = `const __parleySourceUrl = ${url};\n${contents.replace(/\bimport\.meta\.url\b/g, '__parleySourceUrl')}`;
        }
        return { contents, loader: 'ts' };
      });
    },
  };
}

/** Generates, bundles, writes dist/ and records the inputs (last: an interrupted build stays stale). */
export async function build({ log = (line) => console.log(`[build] ${line}`) } = {}) {
  const started = performance.now();
  log('generating code (spec, API types, wire plan, Prisma client)');
  generate();
  const esbuild = await loadEsbuild();
  let result;
  try {
    result = await esbuild.build({
      absWorkingDir: repoRoot,
      entryPoints: { main: path.join(serverDir, 'src', 'main.ts') },
      outdir: distDir,
      write: false,
      bundle: true,
      splitting: true, // main.ts loads the server's modules while PostgreSQL starts: a chunk of their own
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // As Node resolves: no bundler-only "module" condition or field.
      conditions: ['module-sync'],
      mainFields: ['main'],
      sourcemap: 'linked',
      legalComments: 'none',
      banner: { js: "import { createRequire as __parleyCreateRequire } from 'node:module'; const __parleyRequire = __parleyCreateRequire(import.meta.url);" },
      logLevel: 'warning',
      plugins: [sourceSemanticsPlugin(distDir)],
    });
  } finally {
    await esbuild.stop?.();
  }
  rmSync(distDir, { recursive: true, force: true });
  for (const file of result.outputFiles) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.contents);
  }
  // The inputs the bundle was made from (recorded after generation, which may have rewritten some).
  writeFileSync(infoFile, JSON.stringify({ builtAt: new Date().toISOString(), ...describeInputs() }) + '\n');
  log(`apps/server/dist built in ${Math.round(performance.now() - started)} ms`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const force = process.argv.includes('--force');
  const ifPossible = process.argv.includes('--if-possible');
  try {
    if (force || !isFresh()) await build();
    else console.log('[build] apps/server/dist is up to date');
  } catch (error) {
    console.error(`[build] failed: ${error instanceof Error ? error.message : String(error)}`);
    if (ifPossible) console.error('[build] not fatal here: `pnpm start` builds before it starts the server');
    process.exit(ifPossible ? 0 : 1);
  }
}
