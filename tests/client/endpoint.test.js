'use strict';
// The endpoint a workspace sets (myAgent.baseUrl in a cloned repository's .vscode/settings.json) never reaches the
// server, and with it the API key from SecretStorage, until the user confirmed it once for that endpoint; the
// answer lives in the extension's own state, not in the repository.
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const settings = require('../../client/out/common/settings.js');
const { settingsMiddleware, pushedSettings } = require('../../client/out/common/server.js');

const EVIL = 'https://collector.example/v1';
const OWN = 'http://localhost:8080/v1';

/** A configuration with the user's (global) value and the workspace's (folder settings) value of baseUrl. */
const cfg = ({ own, workspace, folder } = {}) => ({
    get: (k) => (k === 'baseUrl' ? (folder ?? workspace ?? own) : undefined),
    inspect: (k) =>
        k === 'baseUrl'
            ? { globalValue: own, workspaceValue: workspace, workspaceFolderValue: folder, defaultValue: '' }
            : { defaultValue: undefined },
});

test('an endpoint the workspace sets is not used until confirmed, even in a trusted workspace', () => {
    assert.equal(settings.readSettings(cfg({ own: OWN, workspace: EVIL }), true).baseUrl, OWN);
    assert.equal(settings.readSettings(cfg({ workspace: EVIL }), true).baseUrl, ''); // none: the server's default
    assert.equal(settings.readSettings(cfg({ own: OWN, folder: EVIL }), true).baseUrl, OWN);
    const confirmed = (url) => settings.endpointKey(url) === settings.endpointKey(EVIL);
    assert.equal(settings.readSettings(cfg({ own: OWN, workspace: EVIL }), true, confirmed).baseUrl, EVIL);
    // Restricted Mode: the user's value only, whatever was confirmed.
    assert.equal(settings.readSettings(cfg({ own: OWN, workspace: EVIL }), false, confirmed).baseUrl, OWN);
    const opts = settings.buildInitializationOptions(settings.readSettings(cfg({ own: OWN, workspace: EVIL }), true), true, []);
    assert.equal(opts.myAgent.baseUrl, OWN);
    assert.equal(JSON.stringify(opts).includes('collector'), false);
});

test('benign twins: the user own endpoint, and a workspace value equal to it, need no question', () => {
    assert.equal(settings.readSettings(cfg({ own: OWN }), true).baseUrl, OWN);
    assert.deepEqual(settings.endpointLevels(cfg({ own: OWN, workspace: 'HTTP://LOCALHOST:8080/v1/' })), { own: OWN });
    assert.equal(settings.readSettings(cfg({ own: OWN, workspace: `${OWN}/` }), true).baseUrl, OWN);
    assert.equal(settings.readSettings(cfg({ own: OWN, workspace: '  ' }), true).baseUrl, OWN);
});

function consentWith(answers, global = vscode.__test.memento(), workspace = vscode.__test.memento()) {
    const asked = [];
    const consent = new settings.EndpointConsent(global, workspace, async (endpoint, own) => {
        asked.push({ endpoint, own });
        return answers.shift();
    });
    return { consent, asked, global, workspace };
}

test('"Use this endpoint" is asked once per endpoint and remembered in globalState', async () => {
    const { consent, asked, global } = consentWith(['use']);
    const config = cfg({ own: OWN, workspace: EVIL });
    assert.equal(consent.allows(EVIL), false);
    assert.equal(await consent.review(config, true), true);
    assert.deepEqual(asked, [{ endpoint: EVIL, own: OWN }]);
    assert.deepEqual(global.get(settings.CONFIRMED_ENDPOINTS_KEY), [settings.endpointKey(EVIL)]);
    assert.equal(settings.readSettings(config, true, consent.allows).baseUrl, EVIL);
    // Another window, another workspace setting the same endpoint: already confirmed, not asked again.
    const again = consentWith([], global);
    assert.equal(await again.consent.review(cfg({ workspace: `${EVIL}/` }), true), false);
    assert.deepEqual(again.asked, []);
    assert.equal(again.consent.allows(EVIL), true);
    // A different endpoint is a new question.
    assert.equal(await again.consent.review(cfg({ own: OWN, workspace: 'https://other.example/v1' }), true), false);
    assert.equal(again.asked.length, 1);
});

test('"Keep my own" is remembered for this workspace; a dismissed question is not asked again in this window', async () => {
    const { consent, asked, workspace, global } = consentWith(['keep']);
    const config = cfg({ own: OWN, workspace: EVIL });
    assert.equal(await consent.review(config, true), false);
    assert.deepEqual(workspace.get(settings.DECLINED_ENDPOINTS_KEY), [settings.endpointKey(EVIL)]);
    assert.equal(global.get(settings.CONFIRMED_ENDPOINTS_KEY), undefined);
    assert.equal(await consent.review(config, true), false);
    assert.equal(consentWith([], global, workspace).asked.length, 0);
    assert.equal(asked.length, 1);
    assert.equal(settings.readSettings(config, true, consent.allows).baseUrl, OWN);

    const dismissed = consentWith([undefined]);
    assert.equal(await dismissed.consent.review(config, true), false);
    assert.equal(await dismissed.consent.review(config, true), false);
    assert.equal(dismissed.asked.length, 1);
    assert.equal(dismissed.workspace.get(settings.DECLINED_ENDPOINTS_KEY), undefined); // asked again next window
});

test('nothing is asked when there is nothing to decide', async () => {
    const { consent, asked } = consentWith([]);
    assert.equal(await consent.review(cfg({ own: OWN }), true), false);
    assert.equal(await consent.review(cfg({ own: OWN, workspace: OWN }), true), false);
    assert.equal(await consent.review(cfg({ own: OWN, workspace: EVIL }), false), false); // untrusted: never used
    assert.deepEqual(asked, []);
});

test('the modal says where the key would go, with "Use this endpoint" and "Keep my own"', async () => {
    vscode.__test.reset();
    vscode.__test.state.answers.push('Use this endpoint');
    assert.equal(await settings.askAboutEndpoint(EVIL, OWN), 'use');
    const [shown] = vscode.__test.state.messages;
    assert.equal(shown.kind, 'warning');
    assert.ok(shown.text.includes(EVIL));
    const [options, ...buttons] = shown.rest;
    assert.equal(options.modal, true);
    assert.ok(options.detail.includes('API key') && options.detail.includes(EVIL) && options.detail.includes(OWN));
    assert.deepEqual(buttons, ['Use this endpoint', 'Keep my own']);
    vscode.__test.state.answers.push('Keep my own');
    assert.equal(await settings.askAboutEndpoint(EVIL, ''), 'keep');
    assert.ok(vscode.__test.state.messages[1].rest[0].detail.includes('default endpoint'));
    assert.equal(await settings.askAboutEndpoint(EVIL, OWN), undefined); // Escape
});

test('the server pulls and is pushed the filtered settings, never the raw section', async () => {
    const config = cfg({ own: OWN, workspace: EVIL });
    let allowed = false;
    const serverView = () => settings.toServerSettings(settings.readSettings(config, true, () => allowed));
    const pushed = [];
    const middleware = settingsMiddleware(serverView, async (params) => {
        pushed.push(params);
    });
    const params = { items: [{ section: 'myAgent' }, { section: 'editor' }] };
    const raw = [{ baseUrl: EVIL }, { tabSize: 4 }];
    const pulled = await middleware.configuration(params, undefined, async () => raw);
    assert.equal(pulled[0].baseUrl, OWN);
    assert.deepEqual(pulled[1], { tabSize: 4 });
    let nextCalled = false;
    await middleware.didChangeConfiguration(['myAgent'], async () => {
        nextCalled = true; // the language client's own push would send the raw section
    });
    assert.equal(nextCalled, false);
    assert.deepEqual(pushed, [{ settings: { myAgent: serverView() } }]);
    assert.equal(pushed[0].settings.myAgent.baseUrl, OWN);
    allowed = true; // confirmed: the next pull and push carry it
    assert.equal((await middleware.configuration(params, undefined, async () => raw))[0].baseUrl, EVIL);
    assert.equal(pushedSettings(serverView).settings.myAgent.baseUrl, EVIL);
});
