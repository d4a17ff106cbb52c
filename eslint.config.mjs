// ESLint 9 flat config: typescript-eslint for the client sources, plain rules for the Node tests.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['client/out/**', 'client/dist/**', 'dist/**', 'bundled/**', 'node_modules/**'] },
    {
        files: ['client/src/**/*.ts', 'client/media/**/*.ts'],
        extends: [js.configs.recommended, ...tseslint.configs.recommended],
        rules: {
            '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
            '@typescript-eslint/no-explicit-any': 'error',
            eqeqeq: ['error', 'always'],
            curly: 'error',
            'no-restricted-syntax': [
                'error',
                {
                    selector: "CallExpression[callee.property.name='insertAdjacentHTML']",
                    message: 'Build HTML through client/src/webview/render.ts (escaped / sanitized).',
                },
            ],
        },
    },
    {
        files: ['tests/client/**/*.js', 'client/build.mjs'],
        extends: [js.configs.recommended],
        languageOptions: {
            sourceType: 'commonjs',
            globals: {
                require: 'readonly',
                module: 'writable',
                __dirname: 'readonly',
                process: 'readonly',
                console: 'readonly',
                setTimeout: 'readonly',
                setImmediate: 'readonly',
                structuredClone: 'readonly',
                Buffer: 'readonly',
            },
        },
    },
    {
        files: ['client/build.mjs'],
        languageOptions: { sourceType: 'module' },
    },
);
