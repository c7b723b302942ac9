// Lint runs inside `npm test`. Type-aware rules catch floating promises,
// which matter in a service whose whole job is settling concurrent calls.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tap/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'error'
    }
  },
  {
    // The operator page's own scripts run in the browser (no build step).
    files: ['ui/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(['document', 'window', 'location', 'sessionStorage', 'fetch', 'URL', 'Node', 'getComputedStyle'].map((g) => [g, 'readonly']))
    },
    rules: { eqeqeq: ['error', 'always', { null: 'ignore' }] }
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'examples/**/*.ts'],
    rules: {
      'no-console': 'off',
      // tap's t.test() returns a promise that tap itself tracks
      '@typescript-eslint/no-floating-promises': 'off',
      // Response bodies of black-box tests are read as plain JSON
      '@typescript-eslint/no-explicit-any': 'off'
    }
  }
)
