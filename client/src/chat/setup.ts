import * as vscode from 'vscode';
import type { SetupInfo } from '../chatModel';
import { getApiKey } from '../common/secrets';

/**
 * What the chat shows before the first message: the model, the endpoint and the key the server will use
 * (the server reads the same settings, and the same variables from the environment it inherits from the
 * extension host), and the workspace's trust. Read again when any of them changes.
 */

export interface SetupEnv {
    readonly [name: string]: string | undefined;
}

function setting(key: string): string {
    const value = vscode.workspace.getConfiguration('myAgent').get<unknown>(key);
    return typeof value === 'string' ? value.trim() : '';
}

export async function readSetup(secrets: vscode.SecretStorage | undefined, env: SetupEnv = process.env): Promise<SetupInfo> {
    const model = setting('model');
    const envModel = (env.MY_AGENT_MODEL ?? '').trim();
    const baseUrl = setting('baseUrl');
    const envUrl = (env.OPENAI_BASE_URL ?? '').trim();
    let stored: string | undefined;
    try {
        stored = secrets ? await getApiKey(secrets) : undefined;
    } catch {
        stored = undefined; // a broken keyring must not hide the chat
    }
    return {
        model: model || envModel,
        modelFrom: model ? 'setting' : envModel ? 'env' : '',
        baseUrl: baseUrl || envUrl,
        baseUrlFrom: baseUrl ? 'setting' : envUrl ? 'env' : '',
        key: stored ? 'secret' : (env.OPENAI_API_KEY ?? '').trim() ? 'env' : 'none',
        trusted: vscode.workspace.isTrusted,
    };
}

/** The Settings editor on the extension's settings (model and base URL come first). */
export const SETUP_SETTINGS_QUERY = '@ext:my-agent.my-agent-core';
