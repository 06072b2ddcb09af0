// ESLint (flat config) with typescript-eslint's type-aware rules over src, test, bench and scripts.
// `npm run lint` runs it (no warnings allowed); `npm test` runs it before the tests.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // The held-out corpus generator is kept as its author wrote it (written apart from the rules).
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'scripts/corpus/heldout/', 'scripts/corpus/heldout2/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Promises: none left unhandled, none passed where a callback's result is ignored.
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test()/describe() return promises the runner itself awaits.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // Types are imported as types (`import { x, type T }`), as verbatimModuleSyntax also asks.
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
      // `_name` marks an intentionally unused binding; `{ drop: _, ...rest }` picks the rest.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // A settings interface may extend another without adding members yet.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      // House style, not defects: `arr[i]!` documents an index known to exist (noUncheckedIndexedAccess
      // is off), and an `async` method without `await` still turns a throw into a rejection.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
      // The classifier matches ANSI escape codes on purpose.
      'no-control-regex': 'off',
    },
  },
  // The layers of src/ (README, "Development"): each imports only from the layers below it.
  ...layers(),
  {
    // Tests, benches and scripts read decoded JSON and test doubles freely; the unsafe-any rules
    // hold in src/ only.
    files: ['test/**', 'bench/**', 'scripts/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  // Plain JavaScript (the bin shim, the test agents): no type information, Node's globals.
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'process',
          'console',
          'URL',
          'Buffer',
          'fetch',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'setImmediate',
          'AbortController',
          'AbortSignal',
        ].map((g) => [g, 'readonly']),
      ),
    },
  },
  // CommonJS on purpose (the openai instrumentation patches `require('openai')`).
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', __filename: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);

/**
 * `no-restricted-imports` per layer of src/, bottom to top: errors.ts, logger.ts and internal/
 * (shared helpers); model/ (data); config/ (the config language); the component contracts
 * (component.ts, store/types.ts, store/state.ts, processors/page.ts); the components — receivers,
 * processors, exporters, extensions, stores — which never import one another's implementations;
 * then components.ts and service/ (wiring) and cli/. Nothing imports upwards.
 */
function layers() {
  const above = ['**/service/**', '**/cli/**', '**/components.ts'];
  const storeImpls = [
    '**/store/sqlite/**',
    '**/store/redis/**',
    '**/store/memory.ts',
    '**/store/bounded-map.ts',
    '**/store/page-bases.ts',
    '**/store/recent-failures.ts',
  ];
  const processorImpls = ['**/processors/*/**'];
  const rule = (files, group, message) => ({ files, rules: { 'no-restricted-imports': ['error', { patterns: [{ group, message }] }] } });
  const components = ['**/receivers/**', '**/exporters/**', '**/extensions/**', ...processorImpls, ...storeImpls];
  return [
    rule(
      ['src/internal/**', 'src/errors.ts', 'src/logger.ts'],
      [...above, ...components, '**/model/**', '**/config/**', '**/store/**', '**/processors/**', '**/component.ts'],
      'src/internal, errors and logger are the bottom layer: they import nothing else of vigil.',
    ),
    rule(
      ['src/model/**'],
      [...above, ...components, '**/config/**', '**/store/**', '**/processors/**', '**/component.ts'],
      'src/model is data: it imports only model and internal helpers (no receiver, store or component).',
    ),
    rule(['src/config/**'], [...above, ...components], 'src/config is below the components: it imports component.ts types, model and internal only.'),
    rule(
      ['src/receivers/**'],
      [...above, '**/exporters/**', '**/extensions/**', ...processorImpls, ...storeImpls],
      'a receiver imports the contracts (component.ts, store/types.ts, …), model, config and internal; never the service or another component.',
    ),
    rule(
      ['src/exporters/**'],
      [...above, '**/receivers/**', '**/extensions/**', ...processorImpls, ...storeImpls],
      'an exporter imports the contracts, model, config and internal; never the service or another component.',
    ),
    rule(
      ['src/extensions/**'],
      [...above, '**/receivers/**', '**/exporters/**', ...processorImpls, ...storeImpls],
      'an extension imports the contracts, model, config and internal; never the service or another component.',
    ),
    rule(
      ['src/processors/**'],
      [...above, '**/receivers/**', '**/exporters/**', '**/extensions/**', ...storeImpls],
      'a processor imports the contracts, model, config and internal; never the service or another kind of component.',
    ),
    rule(
      ['src/store/**'],
      [...above, '**/receivers/**', '**/exporters/**', '**/extensions/**', ...processorImpls],
      'a store imports the contracts, model, config and internal; never the service or another component.',
    ),
  ];
}
