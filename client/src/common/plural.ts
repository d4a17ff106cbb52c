import * as vscode from 'vscode';

/**
 * Plural forms by the editor's language (Intl.PluralRules), so "1 result" and "2 results" each read right in
 * English while a language without plural forms (Chinese) uses its one message. Both forms are whole,
 * already localized messages (each its own `vscode.l10n.t` literal, so translators see both).
 */

export interface PluralForms {
    one: string;
    other: string;
}

let rules: { language: string; rules: Intl.PluralRules } | undefined;

function pluralRules(): Intl.PluralRules {
    const language = vscode.env?.language || 'en';
    if (rules?.language !== language) {
        let made: Intl.PluralRules;
        try {
            made = new Intl.PluralRules(language);
        } catch {
            made = new Intl.PluralRules('en');
        }
        rules = { language, rules: made };
    }
    return rules.rules;
}

/** The form for `n`: `one` where the language says so (1 in English), `other` everywhere else. */
export function plural(n: number, forms: PluralForms): string {
    return pluralRules().select(n) === 'one' ? forms.one : forms.other;
}
