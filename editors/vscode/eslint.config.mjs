// ESLint for the extension and its tests: the recommended JavaScript and typescript-eslint
// rules, plus the type-aware rules that catch a promise nobody awaits or handles.
// Formatting is Prettier's (.prettierrc), not ESLint's.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'out/', 'node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test() returns a promise the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-explicit-any': 'warn',
      // A `let` a closure reads before its one assignment (a callback that may run first)
      // cannot be a `const`: it would be read in its temporal dead zone.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
);
