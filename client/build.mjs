// Bundles the extension (Node, CommonJS) and the chat webview script (browser, IIFE) with source maps.
// Usage: node client/build.mjs [--production] [--watch]
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
    bundle: true,
    sourcemap: true,
    sourcesContent: false,
    minify: production,
    logLevel: 'warning',
    legalComments: 'linked',
};

const builds = [
    {
        ...common,
        entryPoints: ['client/src/extension.ts'],
        outfile: 'client/dist/extension.js',
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        external: ['vscode'],
        // jsonc-parser's UMD build requires its parts at run time; its ES module build bundles cleanly.
        mainFields: ['module', 'main'],
    },
    {
        ...common,
        entryPoints: ['client/media/chat.ts'],
        outfile: 'client/dist/chat.js',
        platform: 'browser',
        format: 'iife',
        target: 'es2022',
    },
];

if (watch) {
    for (const b of builds) {
        const ctx = await esbuild.context(b);
        await ctx.watch();
    }
} else {
    await Promise.all(builds.map((b) => esbuild.build(b)));
    console.log(`client/build.mjs: bundled client/dist/extension.js and client/dist/chat.js${production ? ' (production)' : ''}`);
}
