'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const readJson = (p) => JSON.parse(fs.readFileSync(path.join(root, p), 'utf8'));
const pkg = readJson('package.json');
const nlsEn = readJson('package.nls.json');
const nlsZh = readJson('package.nls.zh-cn.json');
const bundleZh = readJson('l10n/bundle.l10n.zh-cn.json');

function walk(dir) {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
}

/** Every %key% placeholder in the manifest. */
function manifestKeys(value, out = new Set()) {
    if (typeof value === 'string') {
        const m = /^%(.+)%$/.exec(value);
        if (m) {
            out.add(m[1]);
        }
    } else if (Array.isArray(value)) {
        value.forEach((v) => manifestKeys(v, out));
    } else if (value && typeof value === 'object') {
        Object.values(value).forEach((v) => manifestKeys(v, out));
    }
    return out;
}

/** The first argument of every vscode.l10n.t(...) / t(...) call with a string literal, unescaped. */
function sourceMessages() {
    const re = /(?:\bl10n\.t|\bt)\(\s*(['"`])((?:(?!\1)[^\\]|\\.)*)\1/gs;
    const out = new Map();
    for (const file of walk(path.join(root, 'client', 'src')).filter((f) => f.endsWith('.ts'))) {
        const text = fs.readFileSync(file, 'utf8');
        let m;
        while ((m = re.exec(text))) {
            const literal = m[2].replace(/\\(.)/g, (_, c) => ({ n: '\n', t: '\t' })[c] ?? c);
            out.set(literal, path.relative(root, file));
        }
    }
    return out;
}

test('every %key% in package.json exists in package.nls.json and package.nls.zh-cn.json', () => {
    const keys = manifestKeys(pkg);
    assert.ok(keys.size > 20, `found only ${keys.size} keys`);
    for (const k of keys) {
        assert.ok(k in nlsEn, `package.nls.json lacks ${k}`);
        assert.ok(k in nlsZh, `package.nls.zh-cn.json lacks ${k}`);
    }
    assert.deepEqual(Object.keys(nlsZh).sort(), Object.keys(nlsEn).sort(), 'both nls files have the same keys');
    for (const [k, v] of Object.entries(nlsZh)) {
        assert.ok(typeof v === 'string' && v.trim() !== '', `empty translation for ${k}`);
    }
});

test('every runtime message (vscode.l10n.t) has a Simplified Chinese translation', () => {
    assert.equal(pkg.l10n, './l10n');
    const messages = sourceMessages();
    assert.ok(messages.size > 50, `found only ${messages.size} messages`);
    const missing = [...messages.keys()].filter((m) => !(m in bundleZh));
    assert.deepEqual(missing, [], 'messages missing from l10n/bundle.l10n.zh-cn.json');
    const stale = Object.keys(bundleZh).filter((m) => !messages.has(m));
    assert.deepEqual(stale, [], 'translations no longer used in client/src');
    for (const [k, v] of Object.entries(bundleZh)) {
        const placeholders = (s) => (s.match(/\{\d+\}/g) ?? []).sort().join();
        assert.equal(placeholders(v), placeholders(k), `placeholders differ in "${k}"`);
    }
});
